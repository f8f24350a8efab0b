package engagement

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/sources"
	"github.com/shardgate/shardgate/pkg/sources/sourcestest"
)

// TestAFourthKindNeedsNoEngagementChange: a kind the controller was not written for, registered
// only here, is blocked until its API is found, then by what its provider says, and engaged with
// the kubeconfig its provider points to, re-read every resync since it is not watched. A kind
// with no provider registered (a built-in one, here) is unknown. No real API server: the CRD's
// enum would refuse the kind.
func TestAFourthKindNeedsNoEngagementChange(t *testing.T) {
	ctx := context.Background()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	shoot := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "garden", Name: "s1",
		Labels: map[string]string{sourcestest.ShootLabel: ""}},
		Data: map[string]string{sourcestest.KubeconfigKey: "s1.kubeconfig", sourcestest.ReadyKey: "false"}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(shoot,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "garden", Name: "s1.kubeconfig"},
			Data: map[string][]byte{"value": kubeconfig(t, "")}},
		&v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: "garden", Name: "s1"},
			Spec: v1alpha1.ClusterIngressSpec{ClusterRef: v1alpha1.ClusterReference{Kind: sourcestest.Kind, Name: "s1"}}},
		&v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: "garden", Name: "capi"},
			Spec: v1alpha1.ClusterIngressSpec{
				ClusterRef: v1alpha1.ClusterReference{Kind: v1alpha1.SourceKindCluster, Name: "capi"}}},
	).Build()
	shoots := sourcestest.NewShoots()
	f := clusteraccess.NewFake()
	// The cached reader knows no Secret: a kubeconfig that is not watched is read uncached.
	r := &Reconciler{Client: c, KubeconfigSecrets: fake.NewClientBuilder().WithScheme(s).Build(), UnwatchedSecrets: c,
		Sources: sources.Registry{shoots}, Resync: time.Minute, Registry: f}
	key := client.ObjectKey{Namespace: "garden", Name: "s1"}

	controllertest.Reconcile(t, r, key, 1)
	blocked(t, f, key, v1alpha1.ReasonKubeconfigMissing,
		"cluster s1 is a Gardener Shoot, but Gardener has not been found in the seed (yet)")
	shoots.Discovery().Found()
	controllertest.Reconcile(t, r, key, 1)
	blocked(t, f, key, v1alpha1.ReasonControlPlaneNotReady, "Shoot not ready")

	shoot.Data[sourcestest.ReadyKey] = "true"
	if err := c.Update(ctx, shoot); err != nil {
		t.Fatal(err)
	}
	if res := controllertest.Reconcile(t, r, key, 1); res.RequeueAfter != time.Minute {
		t.Fatalf("requeue after %s, want the resync period", res.RequeueAfter)
	}
	if _, ok := f.Engaged[key]; !ok {
		t.Fatal("the Shoot's kubeconfig was not engaged")
	}

	capi := client.ObjectKey{Namespace: "garden", Name: "capi"}
	controllertest.Reconcile(t, r, capi, 1)
	blocked(t, f, capi, v1alpha1.ReasonKubeconfigMissing, `unknown cluster source kind "Cluster"`)
}
