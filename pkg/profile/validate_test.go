package profile

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

func TestValidate(t *testing.T) {
	good := &v1alpha1.IngressProfile{}
	if errs := Validate(good, "seed.example"); len(errs) != 0 {
		t.Fatalf("default profile invalid: %v", errs)
	}
	if errs := Validate(good, ""); len(errs) != 1 || reasonFor(errs) != v1alpha1.ReasonInvalidZone {
		t.Fatalf("no zone anywhere must be invalid: %v", errs)
	}
	bad := &v1alpha1.IngressProfile{Spec: v1alpha1.IngressProfileSpec{
		ClusterSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Nope"}}},
		DNS:             v1alpha1.DNSSettings{Zone: "under_score.example"},
		Shards:          []v1alpha1.ShardSpec{{Name: "a"}, {Name: "a"}, {Name: "b", Replicas: ptr.To[int32](0)}},
	}}
	errs := Validate(bad, "seed.example")
	msg := errs.ToAggregate().Error()
	for _, want := range []string{"spec.clusterSelector", "spec.dns.zone", "spec.shards[1].name: Duplicate", "spec.shards[2].replicas"} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing %q in %s", want, msg)
		}
	}
	if reasonFor(errs) != v1alpha1.ReasonClusterSelectorBad {
		t.Errorf("reason %s", reasonFor(errs))
	}
}
