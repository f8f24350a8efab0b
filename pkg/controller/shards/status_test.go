package shards

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
)

func TestAvailability(t *testing.T) {
	shards := v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default"}, {Name: "edge", NodeSelector: map[string]string{"role": "edge"}}})
	for _, tt := range []struct {
		name   string
		obs    map[string]RouterObservation
		status metav1.ConditionStatus
		reason string
		says   string
	}{
		{"all ready", map[string]RouterObservation{"default": {Deployed: true, ReadyReplicas: 1}, "edge": {Deployed: true, ReadyReplicas: 2}},
			metav1.ConditionTrue, v1alpha1.ReasonShardsAvailable, "2 shard(s)"},
		{"not created", map[string]RouterObservation{"default": {Deployed: true, ReadyReplicas: 1}},
			metav1.ConditionFalse, v1alpha1.ReasonNoRouterReady, "edge: router not created yet"},
		{"no node matches", map[string]RouterObservation{"default": {Deployed: true, ReadyReplicas: 1}, "edge": {Deployed: true, NoMatchingNode: true}},
			metav1.ConditionFalse, v1alpha1.ReasonNoNodeMatchesSelector, "role=edge"},
		{"unschedulable", map[string]RouterObservation{"default": {Deployed: true, Unschedulable: true}, "edge": {Deployed: true, ReadyReplicas: 1}},
			metav1.ConditionFalse, v1alpha1.ReasonPodsUnschedulable, "default: router pods are unschedulable"},
		{"starting", map[string]RouterObservation{"default": {Deployed: true}, "edge": {Deployed: true, ReadyReplicas: 1}},
			metav1.ConditionFalse, v1alpha1.ReasonNoRouterReady, "no router pod is ready yet"},
		{"a tenant's claimed shard without a router is its claim's to tell", map[string]RouterObservation{
			"default": {Deployed: true, ReadyReplicas: 1}, "edge": {Deployed: true, ReadyReplicas: 1},
			"team-a": {Deployed: true, Unschedulable: true}}, metav1.ConditionTrue, v1alpha1.ReasonShardsAvailable,
			"2 shard(s) have ready routers; 1 claimed shard(s) without a ready router (their IngressClaims say so): " +
				"team-a: router pods are unschedulable"},
	} {
		c := Availability(append(shards, v1alpha1.ShardSpec{Name: "team-a", Claim: "team/a"}), tt.obs)
		if c.Status != tt.status || c.Reason != tt.reason || !strings.Contains(c.Message, tt.says) {
			t.Errorf("%s: %s/%s %q", tt.name, c.Status, c.Reason, c.Message)
		}
	}
}

// Tenants' claims are named a few at a time: the message stays bounded however many there are.
func TestAvailabilityNamesAFewClaims(t *testing.T) {
	shards := v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default"}})
	obs := map[string]RouterObservation{"default": {Deployed: true, ReadyReplicas: 1}}
	for i := range 1000 {
		name := fmt.Sprintf("claim-%d", i)
		shards = append(shards, v1alpha1.ShardSpec{Name: name, Claim: "t/" + name})
	}
	c := Availability(shards, obs)
	if c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "1000 claimed shard(s)") || len(c.Message) > 1024 {
		t.Errorf("%s %d bytes: %.200q", c.Status, len(c.Message), c.Message)
	}
}

func TestProtection(t *testing.T) {
	if c := Protection(clusteraccess.Capabilities{AdmissionPolicy: true}); c.Status != metav1.ConditionTrue {
		t.Errorf("%+v", c)
	}
	if c := Protection(clusteraccess.Capabilities{Version: "v1.29"}); c.Reason != v1alpha1.ReasonPolicyUnsupported || !strings.Contains(c.Message, "v1.29") {
		t.Errorf("%+v", c)
	}
}
