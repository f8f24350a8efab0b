package render

import (
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/routekinds"
	"github.com/shardgate/shardgate/pkg/routekinds/routekindstest"
)

// TestAdmissionPolicyCoversStatus: the policy matches the status subresource too (labels and
// annotations sent through it are kept by the API server).
func TestAdmissionPolicyCoversStatus(t *testing.T) {
	objs, err := AdmissionPolicy("system:shardgate", ingressOnly, TenantGuards{})
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
	objs, err := AdmissionPolicy("system:shardgate", ingressOnly, TenantGuards{})
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

// TestAdmissionPolicyCoversEveryRouteKind: each registered kind's protected resources are matched,
// a kind that routes no canary adds none, and no kind at all is refused rather than rendered as
// a policy that protects nothing.
func TestAdmissionPolicyCoversEveryRouteKind(t *testing.T) {
	objs, err := AdmissionPolicy("system:shardgate", routekinds.Registry{routekinds.Ingress{}, routekindstest.Tunnels{}}, TenantGuards{})
	if err != nil {
		t.Fatal(err)
	}
	rules, _, _ := unstructured.NestedSlice(objs[0].Object, "spec", "matchConstraints", "resourceRules")
	var got []string
	for _, r := range rules {
		m := r.(map[string]any)
		groups, _, _ := unstructured.NestedStringSlice(m, "apiGroups")
		res, _, _ := unstructured.NestedStringSlice(m, "resources")
		got = append(got, strings.Join(groups, ",")+":"+strings.Join(res, ","))
	}
	if want := "networking.k8s.io:ingresses,ingresses/status test.shardgate.io:tunnels,tunnels/status"; strings.Join(got, " ") != want {
		t.Errorf("rules %q, want %q", got, want)
	}
	if _, err := AdmissionPolicy("system:shardgate", nil, TenantGuards{}); err == nil {
		t.Error("a policy for no route kind")
	}
	shards := v1alpha1.ResolveShards(nil)
	canary, err := DesiredObjects(DesiredInput{RouteKinds: routekinds.Registry{routekindstest.Tunnels{}, routekinds.Ingress{}},
		ClusterDomain: "c1.z", TTL: 60, Shards: shards, ShardgateUser: "u", Canary: true})
	if err != nil {
		t.Fatal(err)
	}
	routes := 0
	for _, o := range canary {
		if o.GetKind() == "Ingress" || o.GetKind() == "Tunnel" {
			routes++
		}
	}
	if routes != 1 {
		t.Errorf("%d canary routes, want the Ingress alone", routes)
	}
	if _, err := DesiredObjects(DesiredInput{RouteKinds: routekinds.Registry{routekindstest.Tunnels{}}, ClusterDomain: "c1.z", TTL: 60,
		Shards: shards, ShardgateUser: "u", Canary: true}); err == nil {
		t.Error("a canary no route kind routes")
	}
}
