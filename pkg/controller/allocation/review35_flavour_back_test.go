package allocation

import (
	"context"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/names"
)

// TestReview35WayBackStripsHAProxyClassBeforeItsRoutersGo: heavy goes traefik -> haproxy (admitted;
// app carries shardgate.io/ingress.class=shardgate-shard-heavy, the only thing HAProxy's routers
// select it by), then the operator sets it back to traefik (3 a.m. revert). Nothing names
// HAProxy's class, so the way back is admitted at once. The very next allocation pass (woken by
// RunningFlavoursChanged, the same event that starts the shard controller's rolling update of
// heavy's Deployment) deletes the class annotation from every route of heavy, while heavy's
// HAProxy pods are still the ones serving (the Deployment has not rolled: here it has not even been
// re-rendered). Each HAProxy pod left during the roll then serves none of heavy's routes: the drop
// the hold exists to prevent, mirrored (review34 #1 fixed it for traefik -> haproxy only).
//
// Correct: on the way back the shard's routes keep HAProxy's class annotation (Traefik ignores it)
// until heavy's HAProxy routers are gone (the Deployment rolled to traefik), and only then is it
// taken away.
func TestReview35WayBackStripsHAProxyClassBeforeItsRoutersGo(t *testing.T) {
	r, ci, u, seed := review34Setup(t, nil)
	ctx, key := context.Background(), client.ObjectKeyFromObject(ci)
	review34Admit(t, r, seed, ci)
	controllertest.Reconcile(t, r, key, 1)
	app := &networkingv1.Ingress{}
	must(t, u.Get(ctx, client.ObjectKey{Namespace: "team", Name: "app"}, app))
	if app.Annotations[v1alpha1.ShardClassAnnotation] != names.ShardRouteClass("heavy") {
		t.Fatalf("app under HAProxy lacks its class: %v", app.Annotations)
	}

	// The operator sets heavy back to traefik.
	must(t, seed.Client.Get(ctx, key, ci))
	ci.Spec.Shards[1].Flavour, ci.Spec.Shards[1].Image = v1alpha1.FlavourTraefik, ""
	must(t, seed.Client.Update(ctx, ci))
	admitted := false
	for range 4 {
		controllertest.Reconcile(t, r, key, 1)
		must(t, seed.Client.Get(ctx, key, ci))
		if ci.Shards()[1].Flavour == v1alpha1.FlavourTraefik {
			admitted = true
			break
		}
	}
	if !admitted {
		t.Fatalf("heavy's way back never admitted: %+v", meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionFlavourChangesHeld))
	}
	// The pass RunningFlavoursChanged wakes (as it wakes the shard controller, whose roll starts now).
	controllertest.Reconcile(t, r, key, 1)
	must(t, u.Get(ctx, client.ObjectKey{Namespace: "team", Name: "app"}, app))
	if got := app.Annotations[v1alpha1.ShardClassAnnotation]; got != names.ShardRouteClass("heavy") {
		t.Errorf("right after heavy's way back to traefik was admitted (its HAProxy routers still running), app has "+
			"%s=%q: HAProxy's routers no longer select it before Traefik's serve it", v1alpha1.ShardClassAnnotation, got)
	}
}
