package vips

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// With several replicas, the clusters of one L2 domain share a placement group (so one replica
// plans the domain, seeing every member's nodes); clusters without VIPs, or of other domains, do
// not.
// A cluster that still holds VIPs after its VIP shards went stays in its domain until released.
func TestPlacementGroup(t *testing.T) {
	ci := func(name, domain string, vipShard bool, held int) *v1alpha1.ClusterIngress {
		c := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: "tenants", Name: name},
			Spec: v1alpha1.ClusterIngressSpec{VIP: v1alpha1.ClusterVIPSettings{L2Domain: domain},
				Shards: []v1alpha1.ShardSpec{{Name: "default", Publishing: v1alpha1.PublishHostNetwork}}}}
		if vipShard {
			c.Spec.Shards = append(c.Spec.Shards, v1alpha1.ShardSpec{Name: "edge", Publishing: v1alpha1.PublishVIP})
		}
		for range held {
			c.Status.VIPs = append(c.Status.VIPs, v1alpha1.ShardVIPs{Shard: "edge"})
		}
		return c
	}
	a, b := PlacementGroup(ci("a", "rack-1", true, 0)), PlacementGroup(ci("b", "rack-1", true, 1))
	if a == "" || a != b {
		t.Fatalf("one domain's clusters in groups %q and %q", a, b)
	}
	if g := PlacementGroup(ci("c", "rack-2", true, 0)); g == a || g == "" {
		t.Fatalf("another domain's cluster in group %q (rack-1: %q)", g, a)
	}
	if g := PlacementGroup(ci("d", "rack-1", false, 0)); g != "" {
		t.Fatalf("a cluster without VIPs placed in group %q", g)
	}
	if g := PlacementGroup(ci("e", "rack-1", false, 1)); g != a {
		t.Fatalf("a cluster still holding VIPs of rack-1 in group %q, want %q", g, a)
	}
}
