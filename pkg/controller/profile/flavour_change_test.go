package profile

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/controllertest"
)

// TestAShardsFlavourIsFixed: the API server refuses an in-place change of a shard's flavour but
// between traefik and haproxy of a shard that is not the first (each cluster holds the change
// until nothing would be dropped: FlavourChangesHeld), the implicit default shard's and the first
// shard's included (the claimed shards' and the default class's), and says how to move instead;
// adding a shard of another flavour and removing one that is not first are accepted.
func TestAShardsFlavourIsFixed(t *testing.T) {
	seed := controllertest.Seed(t)
	ctx := context.Background()
	shard := func(name string, f v1alpha1.Flavour) v1alpha1.ShardSpec {
		return v1alpha1.ShardSpec{Name: name, Flavour: f}
	}
	for name, tc := range map[string]struct {
		before, after []v1alpha1.ShardSpec
		refused       bool
	}{
		"traefik to haproxy":            {[]v1alpha1.ShardSpec{shard("default", ""), shard("heavy", "traefik")}, []v1alpha1.ShardSpec{shard("default", ""), shard("heavy", "haproxy")}, false},
		"traefik to haproxy, first":     {[]v1alpha1.ShardSpec{shard("heavy", "traefik"), shard("b", "traefik")}, []v1alpha1.ShardSpec{shard("heavy", "haproxy"), shard("b", "traefik")}, true},
		"haproxy to traefik, not first": {[]v1alpha1.ShardSpec{shard("default", ""), shard("heavy", "haproxy")}, []v1alpha1.ShardSpec{shard("default", ""), shard("heavy", "traefik")}, false},
		"haproxy to traefik":            {[]v1alpha1.ShardSpec{shard("heavy", "haproxy")}, []v1alpha1.ShardSpec{shard("heavy", "traefik")}, true},
		"implicit default to haproxy":   {nil, []v1alpha1.ShardSpec{shard("default", "haproxy")}, true},
		"haproxy default to implicit":   {[]v1alpha1.ShardSpec{shard("default", "haproxy")}, nil, true},
		"defaulted flavour named":       {[]v1alpha1.ShardSpec{shard("heavy", "")}, []v1alpha1.ShardSpec{shard("heavy", "traefik")}, false},
		"a shard of the other flavour":  {[]v1alpha1.ShardSpec{shard("heavy", "traefik")}, []v1alpha1.ShardSpec{shard("heavy", "traefik"), shard("heavy2", "haproxy")}, false},
		"the old shard removed": {[]v1alpha1.ShardSpec{shard("default", ""), shard("heavy", "traefik"), shard("heavy2", "haproxy")},
			[]v1alpha1.ShardSpec{shard("default", ""), shard("heavy2", "haproxy")}, false},
		"the first shard's flavour gone": {[]v1alpha1.ShardSpec{shard("heavy", "traefik"), shard("heavy2", "haproxy")},
			[]v1alpha1.ShardSpec{shard("heavy2", "haproxy")}, true},
		"implicit default listed as is":    {nil, []v1alpha1.ShardSpec{shard("default", "traefik"), shard("heavy", "haproxy")}, false},
		"other fields of the shard edited": {[]v1alpha1.ShardSpec{shard("heavy", "haproxy")}, []v1alpha1.ShardSpec{{Name: "heavy", Flavour: "haproxy", Image: "x"}}, false},
	} {
		t.Run(name, func(t *testing.T) {
			p := &v1alpha1.IngressProfile{ObjectMeta: metav1.ObjectMeta{GenerateName: "flavour-"},
				Spec: v1alpha1.IngressProfileSpec{Shards: tc.before}}
			if err := seed.Client.Create(ctx, p); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = seed.Client.Delete(ctx, p) })
			p.Spec.Shards = tc.after
			err := seed.Client.Update(ctx, p)
			switch {
			case tc.refused && (!apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "in place")):
				t.Errorf("update: %v, want Invalid saying how to move instead", err)
			case !tc.refused && err != nil:
				t.Errorf("update: %v, want accepted", err)
			}
		})
	}
}
