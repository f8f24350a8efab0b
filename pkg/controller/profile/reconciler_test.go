package profile

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/test/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

func TestProfileStatus(t *testing.T) {
	seed := controllertest.Seed(t)
	ns := controllertest.Namespace(t, seed.Client)
	ctx := context.Background()
	clock := clocktesting.NewFakePassiveClock(time.Now())
	r := &Reconciler{Client: seed.Client, DefaultZone: "seed.test", Clock: clock}
	p := &v1alpha1.IngressProfile{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	if err := seed.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.ClusterIngressSpec{
			ClusterRef: v1alpha1.ClusterReference{Kind: v1alpha1.SourceKindSecret, Name: name}, Profile: ns, ClusterID: name}}
		if err := seed.Client.Create(ctx, ci); err != nil {
			t.Fatal(err)
		}
	}
	key := types.NamespacedName{Name: ns}
	controllertest.Reconcile(t, r, key, 1)
	if err := seed.Client.Get(ctx, key, p); err != nil {
		t.Fatal(err)
	}
	c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionValid)
	if p.Status.MatchingClusters != 2 || c == nil || c.Status != metav1.ConditionTrue || p.Status.ObservedGeneration != p.Generation {
		t.Fatalf("status %+v", p.Status)
	}
	// A third cluster right after: the count alone waits for countInterval, then is written.
	ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c"}, Spec: v1alpha1.ClusterIngressSpec{
		ClusterRef: v1alpha1.ClusterReference{Kind: v1alpha1.SourceKindSecret, Name: "c"}, Profile: ns, ClusterID: "c"}}
	if err := seed.Client.Create(ctx, ci); err != nil {
		t.Fatal(err)
	}
	if res := controllertest.Reconcile(t, r, key, 1); res.RequeueAfter <= 0 || res.RequeueAfter > countInterval {
		t.Fatalf("the count was not held back: requeue after %s", res.RequeueAfter)
	}
	if err := seed.Client.Get(ctx, key, p); err != nil || p.Status.MatchingClusters != 2 {
		t.Fatalf("count written within countInterval: %d %v", p.Status.MatchingClusters, err)
	}
	clock.SetTime(clock.Now().Add(countInterval))
	controllertest.Reconcile(t, r, key, 1)
	if err := seed.Client.Get(ctx, key, p); err != nil || p.Status.MatchingClusters != 3 {
		t.Fatalf("count after countInterval: %d %v", p.Status.MatchingClusters, err)
	}
	// A condition change is written at once.
	p.Spec.ClusterSelector = metav1.LabelSelector{MatchLabels: map[string]string{"not a key!": "x"}}
	if err := seed.Client.Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	controllertest.Reconcile(t, r, key, 1)
	if err := seed.Client.Get(ctx, key, p); err != nil {
		t.Fatal(err)
	}
	c = meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionValid)
	if c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonClusterSelectorBad || !strings.Contains(c.Message, "spec.clusterSelector") ||
		!strings.Contains(c.Message, "changes nothing") {
		t.Fatalf("Valid: %+v", c)
	}
}
