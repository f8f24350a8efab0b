// Package controllertest is what the reconciler unit tests share: one real seed API server per
// test binary (with Shardgate's, Cluster API's and external-dns' CRDs), fresh namespaces, and
// user clusters played by cluster access' fake over a controller-runtime fake client.
package controllertest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/test/framework"
)

var (
	once    sync.Once
	seed    *framework.ControlPlane
	seedErr error
	seq     atomic.Int32
)

// Seed returns the binary's seed API server, started on first use. Without the control-plane
// tools (make tools) the test is skipped: `make test-unit` passes on a machine without them.
func Seed(t testing.TB) *framework.ControlPlane {
	t.Helper()
	if _, err := framework.LocateTools(framework.ToolKubeAPIServer, framework.ToolEtcd, "crds/cluster-api", "crds/external-dns"); err != nil {
		t.Skipf("reconciler tests need a real API server: %v", err)
	}
	once.Do(func() {
		dirs, err := framework.SeedCRDDirs()
		if err != nil {
			seedErr = err
			return
		}
		seed, seedErr = framework.StartSharedControlPlane("seed", framework.ControlPlaneOptions{CRDDirs: dirs})
	})
	if seedErr != nil {
		t.Fatalf("seed API server: %v", seedErr)
	}
	return seed
}

// Namespace creates a fresh namespace in c and returns its name.
func Namespace(t testing.TB, c client.Client) string {
	t.Helper()
	name := fmt.Sprintf("t%d-%d", time.Now().UnixNano()%1e6, seq.Add(1))
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	return name
}

// UserCluster is a fake user cluster: a fake client holding objs, registered in a Fake under key.
func UserCluster(access *clusteraccess.Fake, key types.NamespacedName, objs ...client.Object) *clusteraccess.FakeCluster {
	c := &clusteraccess.FakeCluster{Client: fake.NewClientBuilder().WithScheme(userScheme).WithObjects(objs...).
		WithStatusSubresource(statusKinds()...).Build()}
	access.Add(key, c)
	return c
}

// userScheme is what user clusters serve to Shardgate (client-go's kinds and RoutedIP).
var userScheme = clusteraccess.UserClusterScheme()

func statusKinds() []client.Object {
	return []client.Object{&corev1.Node{}, &networkingv1.Ingress{}, &appsv1.Deployment{}, &v1alpha1.RoutedIP{},
		&gatewayv1.HTTPRoute{}, &gatewayv1.ListenerSet{}}
}

// Request is the reconcile request for key.
func Request(key types.NamespacedName) reconcile.Request {
	return reconcile.Request{NamespacedName: key}
}

// Reconcile runs r for key n times (finalizers are added on a first pass, work done on the next)
// and fails t on an error. A conflict (a cached read older than the last write) is retried, as
// the controller's queue would.
func Reconcile(t testing.TB, r reconcile.Reconciler, key types.NamespacedName, n int) reconcile.Result {
	t.Helper()
	var res reconcile.Result
	for range n {
		var err error
		for try := 0; ; try++ {
			res, err = r.Reconcile(context.Background(), Request(key))
			if !apierrors.IsConflict(err) || try == 50 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("reconcile %s: %v", key, err)
		}
	}
	return res
}

// CachedClient is a client of the seed whose reads come from a started cache with the given
// field indexes, as in the manager; writes go to the API server. Reads lag writes by the watch:
// use Eventually-style checks or reconcile again.
func CachedClient(t testing.TB, cp *framework.ControlPlane, index func(context.Context, client.FieldIndexer) error) client.Client {
	t.Helper()
	ca, err := cache.New(cp.Config, cache.Options{Scheme: cp.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	if index != nil {
		if err := index(context.Background(), ca); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = ca.Start(ctx) }()
	c, err := client.New(cp.Config, client.Options{Scheme: cp.Client.Scheme(), Cache: &client.CacheOptions{Reader: ca}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ReconcileUntil reconciles key until ok holds (at most 20 s), as the controller's queue would
// on each watch event while a cached client catches up; it fails t with ok's last message.
func ReconcileUntil(t testing.TB, r reconcile.Reconciler, key types.NamespacedName, ok func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		Reconcile(t, r, key, 1)
		done, msg := ok()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s", key, msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
