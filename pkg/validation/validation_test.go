package validation

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

func TestValidate(t *testing.T) {
	good := &v1alpha1.IngressProfile{}
	if errs := Profile(good, "seed.example"); len(errs) != 0 {
		t.Fatalf("default profile invalid: %v", errs)
	}
	if errs := Profile(good, ""); len(errs) != 1 || Reason(errs) != v1alpha1.ReasonInvalidZone {
		t.Fatalf("no zone anywhere must be invalid: %v", errs)
	}
	bad := &v1alpha1.IngressProfile{Spec: v1alpha1.IngressProfileSpec{
		ClusterSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Nope"}}},
		DNS:             v1alpha1.DNSSettings{Zone: "under_score.example"},
		Shards:          []v1alpha1.ShardSpec{{Name: "a"}, {Name: "a"}, {Name: "b", Replicas: ptr.To[int32](0)}},
	}}
	errs := Profile(bad, "seed.example")
	msg := errs.ToAggregate().Error()
	for _, want := range []string{"spec.clusterSelector", "spec.dns.zone", "spec.shards[1].name: Duplicate", "spec.shards[2].replicas"} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing %q in %s", want, msg)
		}
	}
	if Reason(errs) != v1alpha1.ReasonClusterSelectorBad {
		t.Errorf("reason %s", Reason(errs))
	}
	// Values the CRD's enums would refuse are refused here too (objects written before the
	// enums, or by a client that skips validation, never reach a controller unchecked).
	enums := &v1alpha1.IngressProfile{Spec: v1alpha1.IngressProfileSpec{
		Allocation:   v1alpha1.AllocationSettings{Strategy: "Fastest", NamespaceOwnership: "Loose", WildcardPolicy: "Maybe"},
		IngressClass: v1alpha1.IngressClassSettings{Default: "Always"},
		Shards:       []v1alpha1.ShardSpec{{Name: "s", Publishing: "Carrier", Flavour: "nginx", NamespaceSelector: &metav1LabelSelectorBad}, {Name: strings.Repeat("s", 58)}},
	}}
	msg = Profile(enums, "seed.example").ToAggregate().Error()
	for _, want := range []string{"spec.allocation.strategy", "spec.allocation.namespaceOwnership", "spec.allocation.wildcardPolicy",
		"spec.ingressClass.default", "spec.shards[0].publishing", "spec.shards[0].flavour", "spec.shards[0].namespaceSelector", "spec.shards[1].name"} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing %q in %s", want, msg)
		}
	}
}

var metav1LabelSelectorBad = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "In"}}}
