package gatewayapi

import (
	"maps"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestTheSetIsTheStandardChannelButTCPAndUDPRoutes: Shardgate installs every standard CRD of the
// release but TCPRoute and UDPRoute, each CRD of the kind Kinds names and serving it at the version
// Kinds says Shardgate and its routers use (a release that stops serving one fails here, before a
// cluster finds out), and never the safe-upgrades admission policy.
func TestTheSetIsTheStandardChannelButTCPAndUDPRoutes(t *testing.T) {
	crds, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	files, err := CRDFiles.ReadDir("crds")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(f.Name(), Group+"_"), ".yaml")
		switch name {
		case "tcproutes", "udproutes", "vap_safeupgrades":
			continue
		}
		want = append(want, name+"."+Group)
	}
	if got := slices.Sorted(maps.Keys(crds)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Fatalf("installed set %v, want the standard channel's CRDs but TCPRoute's and UDPRoute's: %v", got, want)
	}
	if got := CRDNames(); !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
		t.Fatalf("CRDNames %v, want %v", got, want)
	}
	for _, k := range Kinds {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(crds[k.CRD].Object, crd); err != nil {
			t.Fatal(err)
		}
		if crd.Spec.Names.Kind != k.Kind || crd.Spec.Group != Group {
			t.Errorf("%s is of kind %s/%s, Kinds says %s", k.CRD, crd.Spec.Group, crd.Spec.Names.Kind, k.Kind)
		}
		if !slices.ContainsFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool {
			return v.Name == k.Version && v.Served
		}) {
			t.Errorf("%s does not serve %s, the version Shardgate and its routers use", k.CRD, k.Version)
		}
		if crd.Annotations[ChannelAnnotation] != "standard" || crd.Annotations[BundleVersionAnnotation] != BundleVersion {
			t.Errorf("%s: annotations %v, want the standard channel of %s", k.CRD, crd.Annotations, BundleVersion)
		}
	}
	// Every call is a copy: the engager labels and stamps what it gets.
	crds["httproutes."+Group].SetLabels(map[string]string{"x": "y"})
	again, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	if again["httproutes."+Group].GetLabels() != nil {
		t.Fatal("CRDs returned the copy an earlier caller changed")
	}
	if got := Versions(); !slices.Equal(got, []string{"v1", "v1beta1"}) {
		t.Fatalf("Versions = %v", got)
	}
}
