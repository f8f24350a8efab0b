package clusterview

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

func clusterIngress() *v1alpha1.ClusterIngress {
	expiry := metav1.NewTime(time.Date(2027, 2, 1, 0, 0, 0, 0, time.UTC))
	return &v1alpha1.ClusterIngress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "prod"},
		Spec: v1alpha1.ClusterIngressSpec{
			ClusterRef: v1alpha1.ClusterReference{Kind: "Cluster", Name: "prod"},
			Profile:    "default",
			ClusterID:  "prod",
			Shards: []v1alpha1.ShardSpec{
				{Name: "default", Publishing: v1alpha1.PublishHostNetwork, Replicas: ptr.To[int32](2)},
				{Name: "internal", Publishing: v1alpha1.PublishNodePort},
			},
			Claims: v1alpha1.ClaimSettings{Allowed: true},
		},
		Status: v1alpha1.ClusterIngressStatus{
			ClusterID: "prod", Domain: "prod.example.test", ReadyNodeCount: 2, Targets: []string{"10.0.0.1", "10.0.0.2"},
			Shards: []v1alpha1.ShardStatus{{Name: "default", Domain: "prod.example.test", ReadyReplicas: 2, Targets: []string{"10.0.0.1", "10.0.0.2"}}},
			Claims: []v1alpha1.ClaimRecord{{Namespace: "shop", Name: "edge", Shard: "claim-shop-edge", Phase: v1alpha1.ClaimBound, Replicas: 1}},
			Routes: 7, RejectedRoutes: 1, DNSVerifiedBy: []string{"127.0.0.53:53"},
			Canaries: []v1alpha1.CanaryStatus{{Shard: "default", Host: "shardgate-canary.prod.example.test", Conditions: []metav1.Condition{
				{Type: v1alpha1.ConditionRoutesServing, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonNotAnswering, Message: "timeout"}}}},
			Certificate: &v1alpha1.CertificateStatus{Name: "prod", NotAfter: &expiry},
			Conditions: []metav1.Condition{
				{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonReady},
				{Type: v1alpha1.ConditionDNSPublished, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonPublished, Message: "2 shard(s) published"},
			},
		},
	}
}

func TestFromClusterIngress(t *testing.T) {
	c := FromClusterIngress(clusterIngress())
	if c.Domain != "prod.example.test" || c.ClusterID != "prod" || c.Source != "Cluster" || c.Routes != 7 || c.Rejected != 1 {
		t.Fatalf("identity and counts: %+v", c)
	}
	if !c.Ready.OK() || !c.DNS.OK() || c.DNS.Message != "2 shard(s) published" {
		t.Fatalf("conditions: ready %+v dns %+v", c.Ready, c.DNS)
	}
	// Never written: Unknown with a reason, not an empty cell.
	if c.Reachable.Status != "Unknown" || c.Reachable.Reason != "NotReported" || c.Reachable.Type != v1alpha1.ConditionClusterReachable {
		t.Fatalf("reachable: %+v", c.Reachable)
	}
	if len(c.DNSVerifiedBy) != 1 || c.CertificateExpiry == nil || c.CertificateExpiry.Year() != 2027 {
		t.Fatalf("verified %v expiry %v", c.DNSVerifiedBy, c.CertificateExpiry)
	}
	if len(c.Shards) != 3 {
		t.Fatalf("shards: want the profile's two and the claimed one, got %+v", c.Shards)
	}
	d, in, claimed := c.Shards[0], c.Shards[1], c.Shards[2]
	if d.Name != "default" || d.Desired != 2 || d.Ready != 2 || len(d.Targets) != 2 || d.Publishing != "HostNetwork" ||
		d.Serving == nil || d.Serving.Reason != v1alpha1.ReasonNotAnswering || in.Serving != nil {
		t.Fatalf("default shard: %+v", d)
	}
	// Not observed yet: desired 1 (the default), nothing ready, no targets.
	if in.Name != "internal" || in.Desired != 1 || in.Ready != 0 || in.Targets != nil {
		t.Fatalf("internal shard: %+v", in)
	}
	if claimed.Claim != "shop/edge" {
		t.Fatalf("claimed shard: %+v", claimed)
	}
	if len(c.Conditions) != 2 || c.Conditions[0].Type != v1alpha1.ConditionDNSPublished {
		t.Fatalf("conditions sorted by type: %+v", c.Conditions)
	}
}

func TestFromClusterIngressBeforeAnyStatus(t *testing.T) {
	ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: "x"}, Spec: v1alpha1.ClusterIngressSpec{ClusterID: "x"}}
	c := FromClusterIngress(ci)
	if c.ClusterID != "x" || c.Ready.OK() || c.Ready.Reason != "NotReported" || c.Shards == nil || c.Conditions == nil {
		t.Fatalf("%+v", c)
	}
}
