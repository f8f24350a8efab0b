package clusteraccess

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/shardgate/shardgate/pkg/gatewayapi"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// TestMapperNamesGatewayAPIResourcesAsTheirCRDs: the static mapper maps every Gateway API kind
// Shardgate uses to the resource its CRD serves (the mapper's guess made "gatewaies" of Gateway,
// and every list of Gateways was a 404).
func TestMapperNamesGatewayAPIResourcesAsTheirCRDs(t *testing.T) {
	e, err := NewEngager(Options{RouteKinds: routekinds.Registry{routekinds.Ingress{}, routekinds.HTTPRoute{}}})
	if err != nil {
		t.Fatal(err)
	}
	files, err := gatewayapi.CRDFiles.ReadDir("crds")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range files {
		b, _ := gatewayapi.CRDFiles.ReadFile("crds/" + f.Name())
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(b, crd); err != nil || crd.Kind != "CustomResourceDefinition" {
			continue
		}
		gvk := gatewayapi.GroupVersion.WithKind(crd.Spec.Names.Kind)
		if !e.opts.Scheme.Recognizes(gvk) {
			continue
		}
		m, err := e.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			continue // a kind Shardgate does not use
		}
		checked++
		if m.Resource.Resource != crd.Spec.Names.Plural {
			t.Errorf("%s maps to %q, its CRD serves %q", gvk.Kind, m.Resource.Resource, crd.Spec.Names.Plural)
		}
	}
	if checked < 3 {
		t.Fatalf("%d Gateway API kinds mapped, want GatewayClass, Gateway and HTTPRoute at least", checked)
	}
}
