package clusteraccess

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/watchcache"
	"github.com/shardgate/shardgate/test/framework"
)

// userAPIServer starts a real kube-apiserver as the user cluster of a test (skipped in -short runs
// and without the tools).
func userAPIServer(t *testing.T) *framework.ControlPlane {
	t.Helper()
	return userAPIServerWithFlags(t, nil)
}

// userAPIServerWithFlags is userAPIServer with these kube-apiserver flags.
func userAPIServerWithFlags(t *testing.T, flags map[string]string) *framework.ControlPlane {
	t.Helper()
	if testing.Short() {
		t.Skip("starts an API server")
	}
	if _, err := framework.LocateTools(framework.ToolKubeAPIServer, framework.ToolEtcd); err != nil {
		t.Skipf("needs a real API server: %v", err)
	}
	return framework.StartControlPlane(t, "user", framework.ControlPlaneOptions{APIServerFlags: flags})
}

// TestCacheListsEveryManagedKind builds the user-cluster cache as an engagement does, against a
// real API server, and lists every managed kind the way pruning does (in its cached namespace,
// by Shardgate's label): a kind the cache cannot list would leave removed objects behind.
func TestCacheListsEveryManagedKind(t *testing.T) {
	cp := userAPIServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	scheme := UserClusterScheme()
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.InstallCRDs(filepath.Join(root, "pkg", "clusteraccess", "crds")); err != nil {
		t.Fatal(err)
	}
	caps := Capabilities{AdmissionPolicy: true, CRDs: true}
	mapper, err := staticRESTMapper(scheme, testRouteKinds)
	if err != nil {
		t.Fatal(err)
	}
	synced := make(chan struct{})
	ca, err := watchcache.New(cp.Config, watchcache.Options{Scheme: scheme, Mapper: mapper, OnSynced: func() { close(synced) }}, cacheKinds(caps, testRouteKinds, budget{}, nil))
	if err != nil {
		t.Fatal(err)
	}
	ca.Start(ctx)
	select {
	case <-synced:
	case <-ctx.Done():
		t.Fatal("cache not synced")
	}
	managed := map[string]string{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue}
	for _, ns := range []string{names.Namespace, "other"} {
		if err := cp.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.TLSSecretName, Labels: managed}}
		if err := cp.Client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	for _, kind := range append(ManagedKinds(caps), RoutedIPKinds(caps)...) {
		gvk, err := apiutil.GVKForObject(kind, scheme)
		if err != nil {
			t.Fatal(err)
		}
		l, err := scheme.New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err != nil {
			t.Fatal(err)
		}
		if err := ca.List(ctx, l.(client.ObjectList), client.MatchingLabels(managed)); err != nil {
			t.Errorf("list %s: %v", gvk.Kind, err)
		}
	}
	// The routers' Secret is cached; a Secret of the same name elsewhere is not.
	var secrets corev1.SecretList
	deadline := time.Now().Add(10 * time.Second)
	for len(secrets.Items) == 0 && time.Now().Before(deadline) {
		if err := ca.List(ctx, &secrets, client.InNamespace(names.Namespace)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(secrets.Items) != 1 || secrets.Items[0].Namespace != names.Namespace {
		t.Fatalf("cached Secrets: %v", secrets.Items)
	}
	other := &corev1.Secret{}
	if err := ca.Get(ctx, client.ObjectKey{Namespace: "other", Name: names.TLSSecretName}, other); err == nil {
		t.Fatal("a Secret outside shardgate-system is readable from the cache")
	}
}
