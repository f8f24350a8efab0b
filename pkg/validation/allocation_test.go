package validation

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

func TestAllocation(t *testing.T) {
	ext := func(url, ca string, timeout time.Duration) *v1alpha1.AllocationExtender {
		return &v1alpha1.AllocationExtender{URL: url, CABundle: ca, Timeout: &metav1.Duration{Duration: timeout}}
	}
	tests := []struct {
		a    v1alpha1.AllocationSettings
		want string
	}{
		{v1alpha1.AllocationSettings{Score: "shard.utilization + shard.routes"}, ""},
		{v1alpha1.AllocationSettings{Score: `"a"`}, "spec.allocation.score"},
		{v1alpha1.AllocationSettings{Score: "shard.("}, "spec.allocation.score"},
		{v1alpha1.AllocationSettings{Extender: ext("http://x.example/", "x", time.Second)}, "spec.allocation.extender.url"},
		{v1alpha1.AllocationSettings{Extender: ext("https://u:p@x.example/", "x", time.Second)}, "spec.allocation.extender.url"},
		{v1alpha1.AllocationSettings{Extender: ext("https://x.example/", "no pem", time.Second)}, "spec.allocation.extender.caBundle"},
		{v1alpha1.AllocationSettings{Extender: ext("https://x.example/", "x", time.Minute)}, "spec.allocation.extender.timeout"},
	}
	for _, tt := range tests {
		errs := Allocation(tt.a, field.NewPath("spec", "allocation"))
		got := errs.ToAggregate()
		switch {
		case tt.want == "" && got != nil:
			t.Errorf("%+v: %v", tt.a, got)
		case tt.want != "" && (got == nil || !strings.Contains(got.Error(), tt.want)):
			t.Errorf("%+v: %v, want %s", tt.a, got, tt.want)
		}
	}
}
