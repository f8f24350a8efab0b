package validation

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// TestAttack2LoadFollowFieldsUnvalidated: the fields that make routers follow load are checked by
// the CRD's schema only (maxReplicas >= 1, targetPercent 10..100) and not at all in Go: a
// negative scaleDownDelay (the CRD has no bound on a duration string) makes a router go every
// other reconcile (every 20 s) instead of after a wait; maxReplicas on a flavour whose routers
// report no load (HAProxy) is accepted and does nothing but the spread, silently; a targetPercent
// of 0 written past the schema turns following off silently. Each deserves a clear error.
func TestAttack2LoadFollowFieldsUnvalidated(t *testing.T) {
	base := func(f func(*v1alpha1.ShardLoadSpec), flavour v1alpha1.Flavour) v1alpha1.ShardSpec {
		l := &v1alpha1.ShardLoadSpec{MaxReplicas: ptr.To[int32](4)}
		f(l)
		return v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default", Flavour: flavour, Load: l}})[0]
	}
	tests := []struct {
		name  string
		shard v1alpha1.ShardSpec
	}{
		{"negative scaleDownDelay", base(func(l *v1alpha1.ShardLoadSpec) {
			l.ScaleDownDelay = &metav1.Duration{Duration: -time.Hour}
		}, "")},
		{"targetPercent 0", base(func(l *v1alpha1.ShardLoadSpec) { l.TargetPercent = ptr.To[int32](0) }, "")},
	}
	for _, tt := range tests {
		if errs := Shards([]v1alpha1.ShardSpec{tt.shard}, field.NewPath("spec", "shards")); len(errs) == 0 {
			t.Errorf("%s: accepted", tt.name)
		}
	}
	// Every flavour reports load now: HAProxy's routers may follow it too.
	h := base(func(*v1alpha1.ShardLoadSpec) {}, v1alpha1.FlavourHAProxy)
	if errs := Shards([]v1alpha1.ShardSpec{h}, field.NewPath("spec", "shards")); len(errs) != 0 {
		t.Errorf("maxReplicas on an HAProxy shard: %v", errs)
	}
}
