package clusterid

import (
	"slices"
	"testing"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

func TestPublishedDomains(t *testing.T) {
	shard := func(domain string, targets ...string) v1alpha1.ShardStatus {
		return v1alpha1.ShardStatus{Name: "s", Domain: domain, Targets: targets}
	}
	for _, tt := range []struct {
		name   string
		shards []v1alpha1.ShardStatus
		want   []string
	}{
		{"nothing recorded", nil, nil},
		{"the default shard and one more, with their parents",
			[]v1alpha1.ShardStatus{shard("a.z.test", "10.0.0.1"), shard("X.a.z.test.", "10.0.0.2")},
			[]string{"a.z.test", "test", "x.a.z.test", "z.test"}},
		{"a shard without targets publishes nothing", []v1alpha1.ShardStatus{shard("a.z.test")}, nil},
		{"records moved to b: what the status says now",
			[]v1alpha1.ShardStatus{shard("b.z.test", "10.0.0.1")}, []string{"b.z.test", "test", "z.test"}},
	} {
		got := PublishedDomains(v1alpha1.ClusterIngressStatus{Shards: tt.shards})
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
