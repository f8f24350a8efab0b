package gatewayapi

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The CRDs Shardgate installs are the release whose Go types it compiles against.
func TestBundleMatchesGoMod(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`sigs\.k8s\.io/gateway-api (v\S+)`).FindSubmatch(mod)
	if m == nil || string(m[1]) != BundleVersion {
		t.Fatalf("go.mod requires sigs.k8s.io/gateway-api %q, BundleVersion is %s", m, BundleVersion)
	}
	files, err := CRDFiles.ReadDir("crds")
	if err != nil || len(files) == 0 {
		t.Fatalf("no embedded CRDs: %v", err)
	}
	for _, f := range files {
		b, err := CRDFiles.ReadFile("crds/" + f.Name())
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "gateway.networking.k8s.io/bundle-version: "+BundleVersion) {
			t.Errorf("%s is not of bundle %s", f.Name(), BundleVersion)
		}
	}
}
