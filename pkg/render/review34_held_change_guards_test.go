package render_test

import (
	"strings"
	"testing"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// TestReview34HeldChangeGuardsTheTargetFlavour (review34, tenant T): while shard heavy's change
// from Traefik to HAProxy is held, the cluster's routers are all Traefik's, yet T must not be able
// to plant what HAProxy's routers will read once the change is admitted: an ExternalName Service
// (pointing at the node's localhost), which allocation checks only for the routes the shard holds
// when it admits the change, and a kept Ingress could send to afterwards. The cluster-wide
// admission policy guards the flavour a held change will give (DesiredInput.ChangingTo) from the
// start of the hold; with no change held, a Traefik cluster's policy guards no Service.
func TestReview34HeldChangeGuardsTheTargetFlavour(t *testing.T) {
	shards := v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default"}, {Name: "heavy"}})
	guardsExternalName := func(changingTo []v1alpha1.Flavour) bool {
		d, err := render.RenderDesired(render.DesiredInput{ClusterDomain: "c1.z.test", TTL: 60, ShardgateUser: "u",
			AdmissionPolicy: true, RouteKinds: routekinds.Registry{routekinds.Ingress{}}, Shards: shards, ChangingTo: changingTo})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range d.All() {
			if o.GetKind() != "ValidatingAdmissionPolicy" {
				continue
			}
			for _, v := range validationExpressions(o.Object) {
				if strings.Contains(v, "ExternalName") {
					return true
				}
			}
		}
		return false
	}
	if guardsExternalName(nil) {
		t.Errorf("a Traefik-only cluster with no change held refuses ExternalName Services")
	}
	if !guardsExternalName([]v1alpha1.Flavour{v1alpha1.FlavourHAProxy}) {
		t.Errorf("while heavy's change to HAProxy is held, ExternalName Services are not refused")
	}
}

// validationExpressions are a ValidatingAdmissionPolicy's spec.validations[].expression.
func validationExpressions(obj map[string]any) []string {
	spec, _ := obj["spec"].(map[string]any)
	items, _ := spec["validations"].([]any)
	var out []string
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			if e, ok := m["expression"].(string); ok {
				out = append(out, e)
			}
		}
	}
	return out
}
