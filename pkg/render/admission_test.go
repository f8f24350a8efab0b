package render

import (
	"slices"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/shardgate/shardgate/pkg/routekinds"
)

// TestAdmissionPolicyCoversStatus: the policy matches the status subresource too (labels and
// annotations sent through it are kept by the API server).
func TestAdmissionPolicyCoversStatus(t *testing.T) {
	objs, err := AdmissionPolicy("system:shardgate", routekinds.Registry{routekinds.Ingress{}})
	if err != nil {
		t.Fatal(err)
	}
	vap := as[admissionregistrationv1.ValidatingAdmissionPolicy](t, objs[0])
	res := vap.Spec.MatchConstraints.ResourceRules[0].Resources
	if !slices.Contains(res, "ingresses") || !slices.Contains(res, "ingresses/status") {
		t.Fatalf("resources %v", res)
	}
}

// TestAdmissionPolicyGuardsManagedBy: outside shardgate-system nobody but Shardgate may set or
// change the managed-by label on an Ingress (issue 28 item 2: the label made a tenant's Ingress
// pass for Shardgate's canary, skipped by allocation).
func TestAdmissionPolicyGuardsManagedBy(t *testing.T) {
	objs, err := AdmissionPolicy("system:shardgate", routekinds.Registry{routekinds.Ingress{}})
	if err != nil {
		t.Fatal(err)
	}
	vap := as[admissionregistrationv1.ValidatingAdmissionPolicy](t, objs[0])
	want := `variables.isShardgate || object.metadata.namespace == "shardgate-system" || ` +
		`object.metadata.?labels[?"shardgate.io/managed-by"].orValue('') == ` +
		`(oldObject == null ? '' : oldObject.metadata.?labels[?"shardgate.io/managed-by"].orValue(''))`
	i := slices.IndexFunc(vap.Spec.Validations, func(v admissionregistrationv1.Validation) bool { return v.Expression == want })
	if i < 0 {
		t.Fatalf("no validation %s in %+v", want, vap.Spec.Validations)
	}
	if v := vap.Spec.Validations[i]; v.Reason == nil || *v.Reason != "Forbidden" {
		t.Fatalf("validation %+v: want reason Forbidden", v)
	}
}
