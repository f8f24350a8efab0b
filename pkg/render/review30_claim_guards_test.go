package render_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// TestReview30HAProxyClaimGuardsOtherTenants: a Traefik cluster whose profile lets tenants claim
// HAProxy routers (claims.flavours). Tenant T of namespace team-a creates one IngressClaim with
// flavour haproxy; its claimed shard takes routes of team-a only. Yet RenderDesired adds
// HAProxy's TenantGuards to the one cluster-wide admission policy: every namespace's Services
// become matched, ExternalName Services are refused everywhere, ~90 annotation names are refused
// on every Ingress and Service under any prefix (nginx.ingress.kubernetes.io/ssl-redirect,
// .../whitelist, .../load-balance ...), long paths and default backends too. One tenant's claim
// changes what every other tenant (and the cluster owner, kube-system included) may write, and
// deleting the claim takes it away again: "one tenant's input never affects another".
func TestReview30HAProxyClaimGuardsOtherTenants(t *testing.T) {
	profile := v1alpha1.ClusterIngressSpec{Shards: v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default", Flavour: v1alpha1.FlavourTraefik}}),
		Claims: v1alpha1.ClaimSettings{Allowed: true, Flavours: []v1alpha1.ClaimFlavour{{Name: v1alpha1.FlavourHAProxy}}}}
	// policies are the rendered policies whose binding is not limited to some namespaces.
	policies := func(claims []v1alpha1.ClaimRecord) []*admissionregistrationv1.ValidatingAdmissionPolicy {
		ci := &v1alpha1.ClusterIngress{Spec: profile, Status: v1alpha1.ClusterIngressStatus{Domain: "c1.z.test", Claims: claims}}
		d, err := render.RenderDesired(render.DesiredInput{ClusterDomain: "c1.z.test", TTL: 60, ShardgateUser: "u",
			AdmissionPolicy: true, RouteKinds: routekinds.Registry{routekinds.Ingress{}}, Shards: ci.Shards()})
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]*admissionregistrationv1.ValidatingAdmissionPolicy{}
		scoped := map[string]bool{}
		for _, o := range d.All() {
			switch o.GetKind() {
			case "ValidatingAdmissionPolicy":
				p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, p); err != nil {
					t.Fatal(err)
				}
				byName[p.Name] = p
			case "ValidatingAdmissionPolicyBinding":
				b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, b); err != nil {
					t.Fatal(err)
				}
				if b.Spec.MatchResources != nil && b.Spec.MatchResources.NamespaceSelector != nil {
					scoped[b.Spec.PolicyName] = true
				}
			}
		}
		var out []*admissionregistrationv1.ValidatingAdmissionPolicy
		for name, p := range byName {
			if !scoped[name] {
				out = append(out, p)
			}
		}
		if len(byName) == 0 {
			t.Fatal("no admission policy rendered")
		}
		return out
	}
	baseAll := policies(nil)
	withAll := policies([]v1alpha1.ClaimRecord{{Namespace: "team-a", Name: "mine", Shard: "mine-team-a", Replicas: 1,
		Flavour: v1alpha1.FlavourHAProxy, Ingresses: []string{"web"}, Phase: v1alpha1.ClaimBound}})
	if len(baseAll) != 1 {
		t.Fatalf("%d cluster-wide policies without a claim", len(baseAll))
	}
	base := baseAll[0]
	for _, withClaim := range withAll {
		review30Compare(t, base, withClaim)
	}
}

func review30Compare(t *testing.T, base, withClaim *admissionregistrationv1.ValidatingAdmissionPolicy) {
	t.Helper()
	var baseExprs []string
	for _, v := range base.Spec.Validations {
		baseExprs = append(baseExprs, v.Expression)
	}
	for _, v := range withClaim.Spec.Validations {
		if slices.Contains(baseExprs, v.Expression) || strings.Contains(v.Expression, "team-a") {
			continue
		}
		t.Errorf("tenant team-a's HAProxy claim adds a cluster-wide admission rule every namespace's writes must pass: %.120s… (%s)",
			v.Expression, v.Message)
	}
	if len(withClaim.Spec.MatchConstraints.ResourceRules) != len(base.Spec.MatchConstraints.ResourceRules) {
		t.Errorf("tenant team-a's HAProxy claim makes the cluster-wide policy match more resources: %d rules, %d without the claim",
			len(withClaim.Spec.MatchConstraints.ResourceRules), len(base.Spec.MatchConstraints.ResourceRules))
	}
}

// TestClaimGuardsHoldInTheClaimsNamespaces: the guards of a flavour only claimed shards run are a
// policy of their own, bound to those claims' namespaces; a profile shard of the flavour makes
// them cluster-wide again (one policy).
func TestClaimGuardsHoldInTheClaimsNamespaces(t *testing.T) {
	claim := func(ns string) v1alpha1.ClaimRecord {
		return v1alpha1.ClaimRecord{Namespace: ns, Name: "mine", Shard: "mine-" + ns, Replicas: 1, Flavour: v1alpha1.FlavourHAProxy}
	}
	render1 := func(shards []v1alpha1.ShardSpec) map[string]*admissionregistrationv1.ValidatingAdmissionPolicyBinding {
		ci := &v1alpha1.ClusterIngress{Spec: v1alpha1.ClusterIngressSpec{Shards: v1alpha1.ResolveShards(shards),
			Claims: v1alpha1.ClaimSettings{Allowed: true}},
			Status: v1alpha1.ClusterIngressStatus{Domain: "c1.z.test", Claims: []v1alpha1.ClaimRecord{claim("team-b"), claim("team-a")}}}
		d, err := render.RenderDesired(render.DesiredInput{ClusterDomain: "c1.z.test", TTL: 60, ShardgateUser: "u",
			AdmissionPolicy: true, RouteKinds: routekinds.Registry{routekinds.Ingress{}}, Shards: ci.Shards()})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		for _, o := range d.All() {
			if o.GetKind() == "ValidatingAdmissionPolicyBinding" {
				b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, b); err != nil {
					t.Fatal(err)
				}
				out[b.Name] = b
			}
		}
		return out
	}
	bindings := render1([]v1alpha1.ShardSpec{{Name: "default", Flavour: v1alpha1.FlavourTraefik}})
	scoped := bindings["shardgate-claim-guards"]
	if len(bindings) != 2 || scoped == nil || scoped.Spec.MatchResources == nil ||
		fmt.Sprint(scoped.Spec.MatchResources.NamespaceSelector.MatchExpressions) != "[{kubernetes.io/metadata.name In [team-a team-b]}]" {
		t.Fatalf("bindings %+v, want the claim guards bound to team-a and team-b", bindings)
	}
	if b := render1([]v1alpha1.ShardSpec{{Name: "default", Flavour: v1alpha1.FlavourTraefik},
		{Name: "public", Flavour: v1alpha1.FlavourHAProxy}}); len(b) != 1 {
		t.Errorf("with a profile shard of the flavour: bindings %v, want the one cluster-wide", b)
	}
}
