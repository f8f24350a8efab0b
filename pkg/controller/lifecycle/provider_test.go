package lifecycle

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/sources"
	"github.com/shardgate/shardgate/pkg/sources/sourcestest"
)

// TestAFourthKindNeedsNoLifecycleChange: a kind the controller was not written for, registered
// only here, is read once its API is found, gets a ClusterIngress of its kind, is listed among
// the cluster keys, and is named in SourceAvailable when present and when gone. No real API
// server: the CRD's enum would refuse the kind.
func TestAFourthKindNeedsNoLifecycleChange(t *testing.T) {
	ctx := context.Background()
	s := runtime.NewScheme()
	must(t, clientgoscheme.AddToScheme(s))
	must(t, v1alpha1.AddToScheme(s))
	sel := map[string]string{"env": "prod"}
	shoot := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "garden", Name: "s1",
		Labels: map[string]string{sourcestest.ShootLabel: "", "env": "prod"}}}
	c := fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&v1alpha1.ClusterIngress{}).WithObjects(shoot,
		&v1alpha1.IngressProfile{ObjectMeta: metav1.ObjectMeta{Name: "p"},
			Spec: v1alpha1.IngressProfileSpec{ClusterSelector: metav1.LabelSelector{MatchLabels: sel}}}).Build()
	shoots := sourcestest.NewShoots()
	registry := sources.Registry{shoots}
	r := &Reconciler{Client: c, DefaultZone: "seed.test", Sources: registry, RemovalGrace: time.Minute,
		Clock: clocktesting.NewFakeClock(time.Now()), Board: cistatus.NewBoard(c)}
	key := types.NamespacedName{Namespace: "garden", Name: "s1"}
	reconcile := func() {
		t.Helper()
		if _, err := r.Reconcile(ctx, controllertest.Request(key)); err != nil {
			t.Fatal(err)
		}
	}

	reconcile()
	if ci := getCI(t, c, key); ci != nil {
		t.Fatalf("a source read before its API was found: %+v", ci.Spec.ClusterRef)
	}
	if keys, _ := ClusterKeys(c, registry)(ctx); len(keys) != 0 {
		t.Fatalf("keys listed before the API was found: %v", keys)
	}

	shoots.Discovery().Found()
	if keys, err := ClusterKeys(c, registry)(ctx); err != nil || !slices.Equal(keys, []types.NamespacedName{key}) {
		t.Fatalf("keys %v (%v), want the Shoot's", keys, err)
	}
	reconcile()
	ci := getCI(t, c, key)
	if ci == nil || ci.Spec.Profile != "p" ||
		ci.Spec.ClusterRef != (v1alpha1.ClusterReference{Kind: sourcestest.Kind, Name: "s1"}) {
		t.Fatalf("ClusterIngress of the Shoot: %+v", ci)
	}
	if got, _ := r.Board.Posted(key, v1alpha1.ConditionSourceAvailable); got.Status != metav1.ConditionTrue ||
		got.Message != "the Gardener Shoot exists" {
		t.Fatalf("SourceAvailable: %+v", got)
	}

	must(t, c.Delete(ctx, shoot))
	reconcile()
	if got, _ := r.Board.Posted(key, v1alpha1.ConditionSourceAvailable); got.Reason != v1alpha1.ReasonSourceMissing ||
		!strings.HasPrefix(got.Message, "the Gardener Shoot is gone") {
		t.Fatalf("SourceAvailable once the Shoot is gone: %+v", got)
	}
	// A controller without the provider cannot know the Shoot is gone: it removes nothing.
	blind := &Reconciler{Client: c, DefaultZone: "seed.test", RemovalGrace: 0, Clock: r.Clock, Board: cistatus.NewBoard(c)}
	if _, err := blind.Reconcile(ctx, controllertest.Request(key)); err != nil || getCI(t, c, key) == nil {
		t.Fatalf("a controller without the Shoot provider removed its ClusterIngress (%v)", err)
	}
}

func getCI(t *testing.T, c client.Client, key types.NamespacedName) *v1alpha1.ClusterIngress {
	t.Helper()
	ci := &v1alpha1.ClusterIngress{}
	if err := c.Get(context.Background(), key, ci); err != nil {
		if client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
		return nil
	}
	return ci
}
