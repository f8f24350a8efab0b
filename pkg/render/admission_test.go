package render

import (
	"slices"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// TestAdmissionPolicyCoversStatus: the policy matches the status subresource too (labels and
// annotations sent through it are kept by the API server).
func TestAdmissionPolicyCoversStatus(t *testing.T) {
	objs, err := AdmissionPolicy("system:shardgate")
	if err != nil {
		t.Fatal(err)
	}
	vap := as[admissionregistrationv1.ValidatingAdmissionPolicy](t, objs[0])
	res := vap.Spec.MatchConstraints.ResourceRules[0].Resources
	if !slices.Contains(res, "ingresses") || !slices.Contains(res, "ingresses/status") {
		t.Fatalf("resources %v", res)
	}
}
