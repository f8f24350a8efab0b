package profile

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/controllertest"
)

// TestReview34HeldChangeCanBeUndone: the operator at 3 a.m. changes shard heavy from traefik to
// haproxy (accepted), then sees FlavourChangesHeld: one tenant's route (e.g. a default backend
// beside rules, or any HTTPRoute, which HAProxy never serves) holds the change in every cluster,
// for as long as that tenant likes. The operator wants the edit back. The CRD refuses
// haproxy -> traefik in place, so the profile can never say traefik again for heavy: the only
// ways out are removing heavy (its routes with hosts under heavy's domain are then refused: an
// outage for them) or waiting on the tenant; FlavourChangesHeld stays True meanwhile.
// Undoing is safe: where the change is held, spec equals what runs again (no change at all);
// where it was admitted, the allocation controller already holds a haproxy -> traefik change
// until no route would drop (FlavourChanges/holdChanges are flavour-agnostic; Traefik serves the
// kept-for routes, whose class is Traefik's).
//
// Correct: the CRD accepts haproxy -> traefik for a shard that is not the first (the per-cluster
// hold decides when each cluster rolls), or at least while the change may still be held.
func TestReview34HeldChangeCanBeUndone(t *testing.T) {
	seed := controllertest.Seed(t)
	ctx := context.Background()
	p := &v1alpha1.IngressProfile{ObjectMeta: metav1.ObjectMeta{GenerateName: "review34-"},
		Spec: v1alpha1.IngressProfileSpec{Shards: []v1alpha1.ShardSpec{{Name: "default", Flavour: "traefik"},
			{Name: "heavy", Flavour: "traefik"}}}}
	if err := seed.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = seed.Client.Delete(ctx, p) })
	p.Spec.Shards[1].Flavour = "haproxy"
	if err := seed.Client.Update(ctx, p); err != nil {
		t.Fatalf("the change: %v", err)
	}
	p.Spec.Shards[1].Flavour = "traefik"
	if err := seed.Client.Update(ctx, p); err != nil {
		t.Errorf("undoing a (held) flavour change: %v; want accepted", err)
	}
}
