package v1alpha1

import (
	"testing"
)

// TestRunningShards: a shard runs the flavour (and image) status.shardFlavours admitted while its
// spec asks for another; in a status from before shardFlavours, the one status.shards reports; a
// shard in neither (new) runs its spec's. Claimed shards are not held.
func TestRunningShards(t *testing.T) {
	spec := []ShardSpec{{Name: "default", Flavour: FlavourTraefik}, {Name: "heavy", Flavour: FlavourHAProxy, Image: "haproxy:2"}}
	for name, tc := range map[string]struct {
		status       ClusterIngressStatus
		heavy, image string
		changes      int
	}{
		"admitted":     {ClusterIngressStatus{ShardFlavours: []ShardFlavour{{Name: "heavy", Flavour: FlavourHAProxy, Image: "haproxy:2"}}}, "haproxy", "haproxy:2", 0},
		"held":         {ClusterIngressStatus{ShardFlavours: []ShardFlavour{{Name: "heavy", Flavour: FlavourTraefik, Image: "traefik:3"}}}, "traefik", "traefik:3", 1},
		"older status": {ClusterIngressStatus{Shards: []ShardStatus{{Name: "heavy", Flavour: "traefik"}}}, "traefik", "", 1},
		"new shard":    {ClusterIngressStatus{ShardFlavours: []ShardFlavour{{Name: "default", Flavour: FlavourTraefik}}}, "haproxy", "haproxy:2", 0},
		"no status":    {ClusterIngressStatus{}, "haproxy", "haproxy:2", 0},
		"shardFlavours first": {ClusterIngressStatus{ShardFlavours: []ShardFlavour{{Name: "heavy", Flavour: FlavourHAProxy, Image: "haproxy:2"}},
			Shards: []ShardStatus{{Name: "heavy", Flavour: "traefik"}}}, "haproxy", "haproxy:2", 0},
	} {
		t.Run(name, func(t *testing.T) {
			ci := &ClusterIngress{Spec: ClusterIngressSpec{Shards: spec}, Status: tc.status}
			got := ci.Shards()
			if len(got) != 2 || got[1].Flavour != Flavour(tc.heavy) || got[1].Image != tc.image || got[0].Flavour != FlavourTraefik {
				t.Errorf("shards %+v, want heavy %s (%q)", got, tc.heavy, tc.image)
			}
			if n := len(ci.FlavourChanges()); n != tc.changes {
				t.Errorf("%d changes pending, want %d", n, tc.changes)
			}
			if ci.Spec.Shards[1].Flavour != FlavourHAProxy {
				t.Errorf("the spec changed: %+v", ci.Spec.Shards)
			}
		})
	}
}
