package dns

import (
	"context"
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
)

// TestRoutedIPShardPublishesHeldAddressesOnly: a RoutedIP shard's names answer only the
// addresses the cluster was admitted for and holds; an address it asks for but another cluster
// holds (or that no node holds yet) is not published.
func TestRoutedIPShardPublishesHeldAddressesOnly(t *testing.T) {
	shard := v1alpha1.ShardSpec{Name: "edge", Publishing: v1alpha1.PublishRoutedIP,
		RoutedIP: &v1alpha1.RoutedIPSettings{ClassName: "c", Addresses: []string{"203.0.113.3", "203.0.113.2", "203.0.113.1"}}}
	key := func(a string) string { return names.Namespace + "/" + names.RoutedIPName("edge", a) }
	records := []v1alpha1.RoutedIPRecord{
		{Address: "203.0.113.1", ClassName: "c", RoutedIP: key("203.0.113.1"), Node: "n1"}, // held
		{Address: "203.0.113.2", ClassName: "c", RoutedIP: key("203.0.113.2")},             // admitted, not yet held
		{Address: "203.0.113.3", ClassName: "c", RoutedIP: "team/mine", Node: "n2"},        // an owner's RoutedIP, not the shard's
	}
	ins, _, _, err := shardInputs(context.Background(), fake.NewClientBuilder().Build(), "c1.z.test",
		[]v1alpha1.ShardSpec{shard}, nil, nil, records, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(ins[0].LoadBalancerIPs); got != "[203.0.113.1]" {
		t.Errorf("published %s, want only the held 203.0.113.1", got)
	}
}
