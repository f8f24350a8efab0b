package routedips

import (
	"fmt"
	"testing"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// TestAttackUnknownFlavourDropsARoutedIPShardsPorts (review finding: an unknown flavour loses a
// routed IP's firewall ports): after a downgrade from a release with a further flavour (Helm does
// not downgrade CRDs, so the ClusterIngress keeps a shard of it; validation then freezes the
// shards and allocation controllers), the routed-IP controller, which does not validate, asks
// render.FlavourFor, gets nothing, and gives the shard's admitted RoutedIPs no ports at all: their
// records lose 80 and 443 and the class's firewall no longer opens them for the routers, which
// are still running. A RoutedIP shard's routers listen on the node's 80 and 443 whatever their
// flavour; nothing should be dropped because the flavour is unknown.
func TestAttackUnknownFlavourDropsARoutedIPShardsPorts(t *testing.T) {
	ci := &v1alpha1.ClusterIngress{Spec: v1alpha1.ClusterIngressSpec{Shards: v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "edge",
		Flavour: "haproxy", Publishing: v1alpha1.PublishRoutedIP,
		RoutedIP: &v1alpha1.RoutedIPSettings{ClassName: "c", Addresses: []string{"203.0.113.1"}}}})}}
	if got := fmt.Sprint(shardPorts(ci, "edge")); got != "[{80 TCP} {443 TCP}]" {
		t.Errorf("ports of a routed-IP shard of a flavour this binary does not render: %s, want its routers' 80 and 443", got)
	}
}
