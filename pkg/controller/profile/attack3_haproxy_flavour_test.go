package profile

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/controllertest"
)

// TestAttack3ShardFlavourEmptyListBypass: the implicit-default rules test has(self.shards) /
// has(oldSelf.shards), but an empty list is present (has() is true) and still means the implicit
// traefik default shard (ResolveShards: len(shards) == 0). `shards: []` (kubectl apply of a
// manifest with an empty list, a merge patch, server-side apply) lets the implicit default become
// an haproxy "default" in place, and an haproxy "default" become the implicit traefik one: the
// very in-place change the rule exists to refuse (routes whose class asks for the old routers are
// dropped while the new ones start).
func TestAttack3ShardFlavourEmptyListBypass(t *testing.T) {
	seed := controllertest.Seed(t)
	ctx := context.Background()
	for name, tc := range map[string]struct {
		create []v1alpha1.ShardSpec
		patch  string
	}{
		"implicit default ([]) to haproxy": {nil, `{"spec":{"shards":[{"name":"default","flavour":"haproxy"}]}}`},
		"haproxy default to implicit ([])": {[]v1alpha1.ShardSpec{{Name: "default", Flavour: "haproxy"}}, `{"spec":{"shards":[]}}`},
	} {
		t.Run(name, func(t *testing.T) {
			p := &v1alpha1.IngressProfile{ObjectMeta: metav1.ObjectMeta{GenerateName: "attack3-"},
				Spec: v1alpha1.IngressProfileSpec{Shards: tc.create}}
			if err := seed.Client.Create(ctx, p); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = seed.Client.Delete(ctx, p) })
			if tc.create == nil { // an explicit empty list: still the implicit default shard
				if err := seed.Client.Patch(ctx, p, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"shards":[]}}`))); err != nil {
					t.Fatal(err)
				}
			}
			before := v1alpha1.ResolveShards(p.Spec.Shards)[0].Flavour
			err := seed.Client.Patch(ctx, p, client.RawPatch(types.MergePatchType, []byte(tc.patch)))
			if err == nil {
				after := v1alpha1.ResolveShards(p.Spec.Shards)[0].Flavour
				t.Errorf("shard default's flavour changed in place %s -> %s (stored shards %+v): accepted", before, after,
					p.Spec.Shards)
			}
		})
	}
}
