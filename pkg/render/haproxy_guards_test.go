package render_test

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/pkg/render"
)

// haproxyIngressModule is the controller the HAProxy flavour runs (hack/tools/haproxy-ingress).
const haproxyIngressModule = "github.com/haproxytech/kubernetes-ingress@v1.11.12"

// annotationReads are the ways its source names an annotation it reads: a lookup or a
// constructor with the name as first argument, the defaults table, and name lists it loops over.
var annotationReads = []*regexp.Regexp{
	regexp.MustCompile(`\b(?:GetValue|String|Bool|Int|Timeout|Secret|ParseBool|GetK8sPath|Model[A-Za-z]*|New[A-Za-z]*)\("([a-z][a-z0-9.-]*)"`),
	regexp.MustCompile(`(?m)^\s*"([a-z][a-z0-9-]*)":\s+"[^"]*",\s*$`),
	regexp.MustCompile(`range \[\]string\{([^}]*)\}`),
	regexp.MustCompile(`"([a-z-]*(?:snippet|standalone)[a-z-]*)"`),
}

var quoted = regexp.MustCompile(`"([a-z][a-z0-9-]*)"`)

// TestHAProxyGuardsEveryAnnotationItReads: every annotation name the pinned controller's source
// reads (from Ingresses, Services or its ConfigMap: it strips any prefix, so a tenant's own object
// could carry any of them) is among the flavour's TenantGuards, so the admission policy refuses it
// to tenants. ingress.class has a guard of its own. A newer controller adding a name fails here.
func TestHAProxyGuardsEveryAnnotationItReads(t *testing.T) {
	out, err := exec.Command("go", "mod", "download", "-json", haproxyIngressModule).Output()
	if err != nil {
		t.Fatalf("go mod download %s (the tools build downloads it): %v", haproxyIngressModule, err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download: %s %v", out, err)
	}
	read := map[string]bool{}
	err = filepath.WalkDir(filepath.Join(mod.Dir, "pkg"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") ||
			strings.Contains(path, "/gateways/") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, re := range annotationReads {
			switch {
			case i == 1 && !strings.HasSuffix(path, "annotations/common/main.go"):
				continue // the defaults table only
			case i == 2 && !strings.Contains(path, "/pkg/service/"):
				continue // a Service's name lists only
			}
			for _, m := range re.FindAllStringSubmatch(string(b), -1) {
				if i != 2 {
					read[m[1]] = true
					continue
				}
				for _, q := range quoted.FindAllStringSubmatch(m[1], -1) {
					read[q[1]] = true
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(read) < 60 {
		t.Fatalf("found only %d annotation names in %s: the scan no longer matches its source", len(read), mod.Dir)
	}
	guarded := render.HAProxy{}.TenantGuards().Annotations
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range read {
			if !yield(n) {
				return
			}
		}
	}) {
		if name != "ingress.class" && !slices.Contains(guarded, name) {
			t.Errorf("the controller reads annotation %q, which the admission policy does not refuse to tenants", name)
		}
	}
}

// TestHAProxyConfigMapOnlyAnnotationsAreGuardedNotRouteRead: every name the controller reads from
// its ConfigMap only is still refused at admission (in Annotations), and none of them is one it
// reads from routes, which allocation refuses routes for.
func TestHAProxyConfigMapOnlyAnnotationsAreGuardedNotRouteRead(t *testing.T) {
	g := render.HAProxy{}.TenantGuards()
	route := g.RouteAnnotations()
	for _, n := range g.ConfigMapOnly {
		if !slices.Contains(g.Annotations, n) {
			t.Errorf("%s is read from the ConfigMap only but not guarded at admission", n)
		}
		if slices.Contains(route, n) {
			t.Errorf("%s is read from the ConfigMap only but allocation refuses routes for it", n)
		}
	}
	for _, n := range []string{"route-acl", "backend-config-snippet", "timeout-server", "ssl-redirect", "server-crt"} {
		if !slices.Contains(route, n) {
			t.Errorf("%s, which the controller reads from routes or Services, is not in RouteAnnotations", n)
		}
	}
	if len(route)+len(g.ConfigMapOnly) != len(g.Annotations) {
		t.Errorf("%d route-read and %d ConfigMap-only names, %d guarded", len(route), len(g.ConfigMapOnly), len(g.Annotations))
	}
}
