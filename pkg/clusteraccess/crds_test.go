package clusteraccess

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestEstablishedFromTheApplyAnswer: an apply's answer that says Established spares the
// engagement its GETs of the CRD; anything else (no status, False, a malformed status) waits.
func TestEstablishedFromTheApplyAnswer(t *testing.T) {
	cond := func(typ, status string) map[string]any { return map[string]any{"type": typ, "status": status} }
	for name, tc := range map[string]struct {
		status any
		want   bool
	}{
		"established":          {map[string]any{"conditions": []any{cond("NamesAccepted", "True"), cond("Established", "True")}}, true},
		"not yet":              {map[string]any{"conditions": []any{cond("NamesAccepted", "True"), cond("Established", "False")}}, false},
		"no status":            {nil, false},
		"conditions malformed": {map[string]any{"conditions": "Established"}, false},
	} {
		t.Run(name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
				"metadata": map[string]any{"name": "routedips.shardgate.io"}}}
			if tc.status != nil {
				u.Object["status"] = tc.status
			}
			if got := established(u); got != tc.want {
				t.Fatalf("established = %v, want %v", got, tc.want)
			}
		})
	}
}
