package clusterid

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

func spec(id, zone string) v1alpha1.ClusterIngressSpec {
	return v1alpha1.ClusterIngressSpec{ClusterID: id, DNS: v1alpha1.ResolveDNS(v1alpha1.DNSSettings{Zone: zone}, ""),
		Shards: v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default", Publishing: v1alpha1.PublishNodePort}})}
}

func TestRequestedDomain(t *testing.T) {
	longShard := spec("c1", "z.test")
	longShard.Shards = append(longShard.Shards, v1alpha1.ShardSpec{Name: strings.Repeat("s", 58),
		Publishing: v1alpha1.PublishNodePort})
	badSelector := spec("c1", "z.test")
	badSelector.DNS.IngressNodeSelector = &metav1LabelSelectorBad
	for _, tt := range []struct {
		name           string
		spec           v1alpha1.ClusterIngressSpec
		served         []string
		domain, reason string
	}{
		{"usable", spec("c1", "z.test"), nil, "c1.z.test", ""},
		{"served subzone", spec("c1", "a.z.test"), []string{"z.test"}, "c1.a.z.test", ""},
		{"every zone served", spec("c1", "other.test"), []string{"*"}, "c1.other.test", ""},
		{"not served", spec("c1", "other.test"), []string{"z.test"}, "", v1alpha1.ReasonZoneNotServed},
		{"bad zone", spec("c1", "bad_zone"), nil, "", v1alpha1.ReasonInvalidZone},
		{"bad ID", spec("C_1", "z.test"), nil, "", v1alpha1.ReasonInvalidClusterID},
		{"ID over the registry budget", spec(strings.Repeat("c", 58), "z.test"), nil, "", v1alpha1.ReasonNamesTooLong},
		{"a shard over the budget", longShard, nil, "", v1alpha1.ReasonNamesTooLong},
		{"an ingress node selector that does not parse", badSelector, nil, "", v1alpha1.ReasonProfileInvalid},
	} {
		d, refusal := RequestedDomain(tt.spec, tt.served)
		if d != tt.domain || (refusal == nil) != (tt.reason == "") || (refusal != nil && refusal.Reason != tt.reason) {
			t.Errorf("%s: %q %+v; want %q %s", tt.name, d, refusal, tt.domain, tt.reason)
		}
	}
	if got := Asked(spec("C_1", "Z.test.")); got != "C_1.z.test" {
		t.Errorf("Asked of an invalid ID: %q (the index must still find whoever it contends with)", got)
	}
}

var metav1LabelSelectorBad = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k",
	Operator: "Bogus"}}}
