package e2e

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/shardgate/shardgate/test/framework"
)

// chartExternalDNSArgs renders the chart's external-dns Deployments for zone with the extra
// --set values and returns each one's arguments by Deployment name: the benches and specs run
// external-dns as the chart does (the harness adds only where BIND is and its TSIG key).
func chartExternalDNSArgs(t testing.TB, zone string, set ...string) map[string][]string {
	t.Helper()
	args := []string{"template", "x", chart, "--set", "dns.zone=" + zone, "--set", "externalDNS.enabled=true",
		"--show-only", "templates/external-dns.yaml"}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	out, err := helm(t, args...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	deployments := map[string][]string{}
	dec := yaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096)
	for {
		d := &appsv1.Deployment{}
		if err := dec.Decode(d); err != nil {
			break
		}
		if d.Kind == "Deployment" {
			deployments[d.Name] = d.Spec.Template.Spec.Containers[0].Args
		}
	}
	if len(deployments) == 0 {
		t.Fatalf("the chart rendered no external-dns Deployment:\n%s", out)
	}
	return deployments
}

// startChartExternalDNS starts every external-dns Deployment the chart renders (see
// chartExternalDNSArgs) against seed and server, each with the chart's arguments.
func startChartExternalDNS(t testing.TB, seed *framework.ControlPlane, server *framework.DNSServer, logLevel string,
	set ...string) map[string]*framework.ExternalDNS {
	t.Helper()
	out := map[string]*framework.ExternalDNS{}
	for name, args := range chartExternalDNSArgs(t, server.Zone, set...) {
		out[name] = framework.StartExternalDNS(t, seed, server, framework.ExternalDNSOptions{LogLevel: logLevel, Args: args})
	}
	return out
}
