package render

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// TestCRDsAllowTheBuiltinFlavours: a flavour registered in builtin is also allowed by the CRDs'
// enum (v1alpha1.Flavour's marker, make manifests), and the enum allows no flavour Shardgate does
// not render. Both must change together: the API server would refuse a shard of the new flavour,
// or accept one no router is rendered for.
func TestCRDsAllowTheBuiltinFlavours(t *testing.T) {
	var want []string
	for _, f := range builtin {
		want = append(want, string(f.Name()))
	}
	slices.Sort(want)
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("CRDs: %v %v", files, err)
	}
	found := 0
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(b, crd); err != nil {
			t.Fatal(err)
		}
		for _, v := range crd.Spec.Versions {
			if v.Schema == nil {
				continue
			}
			// The specs' flavours (status only reports a shard's, as a string).
			spec := v.Schema.OpenAPIV3Schema.Properties["spec"]
			walkProps(&spec, func(name string, p apiextensionsv1.JSONSchemaProps) {
				if name != "flavour" {
					return
				}
				found++
				var got []string
				for _, e := range p.Enum {
					var s string
					if err := yaml.Unmarshal(e.Raw, &s); err != nil {
						t.Fatal(err)
					}
					got = append(got, s)
				}
				slices.Sort(got)
				def := `"` + string(v1alpha1.FlavourTraefik) + `"`
				if !slices.Equal(got, want) || p.Default == nil || string(p.Default.Raw) != def {
					t.Errorf("%s: flavour enum %v (default %v), want %v", filepath.Base(file), got, p.Default, want)
				}
			})
		}
	}
	if found == 0 {
		t.Fatal("no flavour field in the CRDs")
	}
}

func walkProps(p *apiextensionsv1.JSONSchemaProps, visit func(string, apiextensionsv1.JSONSchemaProps)) {
	if p == nil {
		return
	}
	for name, c := range p.Properties {
		visit(name, c)
		walkProps(&c, visit)
	}
	if p.Items != nil {
		walkProps(p.Items.Schema, visit)
	}
}
