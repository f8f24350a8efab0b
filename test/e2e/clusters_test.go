package e2e

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/test/framework"
)

// capiFinalizer is Cluster API's finalizer on Clusters: a deleted Cluster stays, being deleted,
// until Cluster API has torn the cluster down.
const capiFinalizer = "cluster.cluster.x-k8s.io"

// registerCAPICluster creates a Cluster API Cluster for user in the seed, initialized, with its
// <name>-kubeconfig Secret (key "value") and finalizer, as Cluster API would.
func registerCAPICluster(ctx context.Context, t *testing.T, seed *framework.ControlPlane, ns, name string, user *framework.ControlPlane, labels, annotations map[string]string) {
	t.Helper()
	c := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, Annotations: annotations,
		Finalizers: []string{capiFinalizer}},
		Spec: clusterv1.ClusterSpec{Paused: ptr.To(false)}}
	if err := seed.Client.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	c.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
	if err := seed.Client.Status().Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	if user == nil {
		return
	}
	kc, err := user.Kubeconfig("shardgate-"+name, "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	putCAPIKubeconfig(ctx, t, seed, ns, name, kc)
}

// removeCAPIFinalizer lets a deleted Cluster go, as Cluster API does once the cluster is torn down.
func removeCAPIFinalizer(ctx context.Context, t *testing.T, seed *framework.ControlPlane, k client.ObjectKey) {
	t.Helper()
	c := &clusterv1.Cluster{}
	if err := seed.Client.Get(ctx, k, c); err != nil {
		return
	}
	c.Finalizers = nil
	if err := seed.Client.Update(ctx, c); err != nil && !apierrors.IsNotFound(err) {
		t.Error(err)
	}
}

func putCAPIKubeconfig(ctx context.Context, t *testing.T, seed *framework.ControlPlane, ns, cluster string, kc []byte) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cluster + "-kubeconfig"}}
	s.Labels = map[string]string{clusterv1.ClusterNameLabel: cluster}
	s.Type = clusterv1.ClusterSecretType
	s.Data = map[string][]byte{"value": kc}
	upsert(ctx, t, seed.Client, s, func() { s.Data = map[string][]byte{"value": kc} })
}

// registerKubeconfigSecret registers user through a Secret labelled shardgate.io/kubeconfig.
func registerKubeconfigSecret(ctx context.Context, t testing.TB, seed *framework.ControlPlane, ns, name, clusterID string, user *framework.ControlPlane, labels map[string]string) {
	t.Helper()
	kc, err := user.Kubeconfig("shardgate-"+name, "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	l := map[string]string{v1alpha1.KubeconfigSecretLabel: "true"}
	for k, v := range labels {
		l[k] = v
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: l,
		Annotations: map[string]string{v1alpha1.ClusterIDAnnotation: clusterID}},
		Data: map[string][]byte{"kubeconfig": kc}}
	if err := seed.Client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
}

// putKubeconfigSecret creates or replaces a Secret labelled shardgate.io/kubeconfig holding kc,
// asking for cluster ID id.
func putKubeconfigSecret(ctx context.Context, t testing.TB, seed *framework.ControlPlane, ns, name, id string, kc []byte, labels map[string]string) {
	t.Helper()
	l := map[string]string{v1alpha1.KubeconfigSecretLabel: "true"}
	for k, v := range labels {
		l[k] = v
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: l,
		Annotations: map[string]string{v1alpha1.ClusterIDAnnotation: id}}, Data: map[string][]byte{"kubeconfig": kc}}
	upsert(ctx, t, seed.Client, s, func() {
		s.Labels, s.Annotations, s.Data = l, map[string]string{v1alpha1.ClusterIDAnnotation: id}, map[string][]byte{"kubeconfig": kc}
	})
}

func upsert(ctx context.Context, t testing.TB, c client.Client, obj client.Object, mutate func()) {
	t.Helper()
	err := c.Create(ctx, obj)
	if err == nil {
		return
	}
	// The controllers write status meanwhile: read afresh on a conflict.
	must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		mutate()
		return c.Update(ctx, obj)
	}))
}

func createProfile(ctx context.Context, t testing.TB, seed *framework.ControlPlane, name string, selector map[string]string, dns v1alpha1.DNSSettings, shards ...v1alpha1.ShardSpec) {
	t.Helper()
	p := &v1alpha1.IngressProfile{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.IngressProfileSpec{ClusterSelector: metav1.LabelSelector{MatchLabels: selector}, DNS: dns, Shards: shards}}
	if err := seed.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
}

func addNodes(ctx context.Context, t *testing.T, cp *framework.ControlPlane, nodes ...framework.NodeSpec) {
	t.Helper()
	for _, n := range nodes {
		if err := cp.AddNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
