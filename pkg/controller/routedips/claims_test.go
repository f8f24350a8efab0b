package routedips

import (
	"fmt"
	"testing"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// TestShardPorts: a RoutedIP shard's ports are those Shardgate renders for its routers (the
// node's 80 and 443), whatever the user cluster's objects say.
func TestShardPorts(t *testing.T) {
	ci := &v1alpha1.ClusterIngress{Spec: v1alpha1.ClusterIngressSpec{Shards: v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "edge",
		Publishing: v1alpha1.PublishRoutedIP, RoutedIP: &v1alpha1.RoutedIPSettings{ClassName: "c", Addresses: []string{"203.0.113.1"}}}})}}
	if got := fmt.Sprint(shardPorts(ci, "edge")); got != "[{80 TCP} {443 TCP}]" {
		t.Errorf("edge: %s", got)
	}
	if got := shardPorts(ci, "other"); got != nil {
		t.Errorf("a shard the spec does not have: %v", got)
	}
}
