//go:build conformance

// Gateway API's own conformance suite against a Shardgate-rendered Traefik shard on a real node.
// It takes about six minutes and needs nothing make test does not, but CI's budget is full: it
// runs only with the conformance build tag (make conformance, which also prints the results).

package e2e

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/miekg/dns"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientset "k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/apis/v1alpha2"
	"sigs.k8s.io/gateway-api/apis/v1alpha3"
	xv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"
	"sigs.k8s.io/gateway-api/conformance"
	"sigs.k8s.io/gateway-api/conformance/tests"
	"sigs.k8s.io/gateway-api/conformance/utils/config"
	"sigs.k8s.io/gateway-api/conformance/utils/roundtripper"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	"sigs.k8s.io/gateway-api/pkg/features"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/test/framework"
)

// conformanceClass is the suite's GatewayClass. The suite creates Gateways of it in namespaces of
// its own; Shardgate's admission policy refuses Gateways of Shardgate's classes outside its
// namespace, so the cluster owner gives the suite a class of its own that the shard's Traefik
// serves all the same: its Gateway provider takes every class of its controller that carries the
// shard's label (render.Traefik's --providers.kubernetesgateway.labelselector). The suite thus
// tests Traefik as Shardgate renders and runs it (flags, ports, RBAC, published address, on a real
// node), not Shardgate's allocation: its routes attach to its own Gateways, which allocation and
// the admission policy's route guards leave alone.
const conformanceClass = "gateway-conformance"

// echoImage is the suite's backend (echo-basic), built from the conformance module's source: the
// harness has no registry.
const echoImage = "localhost/shardgate/echo-basic:v1.6.3"

// TestGatewayAPIConformance runs the core tests of the GATEWAY-HTTP profile (Gateway, HTTPRoute
// and, with them, ReferenceGrant) against the default shard's Traefik on a real node, rendered and
// deployed by Shardgate as for any cluster with Gateway API on.
//
// Not parallel: the suite's timeouts are meant for a cluster of its own, and make conformance runs
// it alone.
func TestGatewayAPIConformance(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Minute)
	defer cancel()
	env := framework.StartEnvironment(t, framework.EnvironmentOptions{UserClusters: 1, DNS: true,
		RealNodes: [][]framework.RealNodeSpec{{{Name: "n1", Labels: map[string]string{"role": "general"}}}}})
	u, node := env.Users[0], env.Nodes[0][0]
	must(t, framework.InstallGatewayAPI(ctx, u))
	framework.StartController(t, env.Seed, "--dns-zone="+env.DNS.Zone, "--dns-verify-servers="+env.DNS.Addr,
		"--canary-proxy="+env.Fabrics[0].StartProxy(t), "--canary-allow-cidrs=10.123.0.0/16") // the fabric's nodes
	sel := map[string]string{"gateway": "api"}
	must(t, env.Seed.Client.Create(ctx, &v1alpha1.IngressProfile{ObjectMeta: metav1.ObjectMeta{Name: "conformance"},
		Spec: v1alpha1.IngressProfileSpec{ClusterSelector: metav1.LabelSelector{MatchLabels: sel},
			GatewayAPI: v1alpha1.GatewayAPIEnabled,
			Shards:     []v1alpha1.ShardSpec{realRouter(v1alpha1.ShardSpec{Name: v1alpha1.DefaultShardName})}}}))
	registerCAPICluster(ctx, t, env.Seed, "default", "c1", u, sel, nil)
	must(t, framework.WaitRouters(ctx, u, names.Namespace, names.RouterName(v1alpha1.DefaultShardName)))
	must(t, node.ImportImage(echoBasicImage(t)))
	controller := gatewayv1.GatewayController(render.Traefik{}.GatewayClassController())
	must(t, u.Client.Create(ctx, &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: conformanceClass,
		Labels: map[string]string{v1alpha1.ShardLabel: v1alpha1.DefaultShardName}},
		Spec: gatewayv1.GatewayClassSpec{ControllerName: controller}}))

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha3.Install, v1alpha2.Install,
		xv1alpha1.Install, gatewayv1.Install, apiextensionsv1.AddToScheme} {
		must(t, add(scheme))
	}
	cfg := rest.CopyConfig(u.Config) // the suite sets its user agent on it per test
	opts := client.Options{Scheme: scheme}
	c, err := client.New(cfg, opts)
	must(t, err)
	cs, err := clientset.NewForConfig(cfg)
	must(t, err)
	cSuite, err := suite.NewConformanceTestSuite(suite.ConformanceOptions{
		ConfigurableOptions: suite.ConfigurableOptions{
			GatewayClassName: conformanceClass,
			// The environment goes with the test; each test's own objects must go before the next.
			CleanupTestResources: true,
			SupportedFeatures:    []features.FeatureName{features.SupportGateway, features.SupportHTTPRoute},
			ConformanceProfiles:  []suite.ConformanceProfileName{suite.GatewayHTTPConformanceProfileName},
			TimeoutConfig:        config.DefaultTimeoutConfig(),
		},
		Client: c, ClientOptions: opts, Clientset: cs, RestConfig: cfg,
		RoundTripper: &roundtripper.DefaultRoundTripper{TimeoutConfig: config.DefaultTimeoutConfig(),
			CustomDialContext: gatewayDialer(env.DNS, env.Fabrics[0])},
		ManifestFS: []fs.FS{conformanceManifests(t)},
	})
	must(t, err)
	// The suite's own tally, the figures its published reports give. Registered before Run's
	// cleanup, it runs after it: the suite reports only once the run is over.
	t.Cleanup(func() {
		report, err := cSuite.Report()
		if err != nil {
			t.Error(err)
			return
		}
		for _, p := range report.ProfileReports {
			t.Logf("profile %s core: %s (passed %d, failed %d, skipped %d)", p.Name, p.Core.Result,
				p.Core.Statistics.Passed, p.Core.Statistics.Failed, p.Core.Statistics.Skipped)
		}
	})
	cSuite.Setup(t, tests.ConformanceTests)
	must(t, cSuite.Run(t, tests.ConformanceTests))
}

// echoBasicImage builds the suite's echo-basic from the module the suite is (go.mod pins it) and
// returns its image tar.
func echoBasicImage(t *testing.T) string {
	root, err := framework.RepoRoot()
	must(t, err)
	dir := framework.TestDir(t)
	bin := filepath.Join(dir, "echo-basic")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "sigs.k8s.io/gateway-api/conformance/echo-basic")
	cmd.Dir, cmd.Env = root, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build echo-basic: %v\n%s", err, out)
	}
	tar := filepath.Join(dir, "echo-basic.tar")
	must(t, framework.WriteOCIImage(echoImage, []framework.ImageFile{{Src: bin, Dst: "/echo-basic"}}, "/echo-basic", tar))
	return tar
}

var echoBasic = regexp.MustCompile(`registry\.k8s\.io/gateway-api/echo-basic:\S+`)

// conformanceManifests are the suite's manifests as the harness runs them: echo-basic from echoImage; without
// the CoreDNS Deployment (an image nobody here builds, the backend of UDPRoute tests only, which
// GATEWAY-HTTP does not run): the suite waits for every pod of its namespaces to be ready; and
// every GatewayClass a test creates labelled for the shard, as the cluster owner labelled
// conformanceClass: the shard's Traefik serves only its shard's classes.
func conformanceManifests(t *testing.T) fs.FS {
	out, coredns := fstest.MapFS{}, 0
	must(t, fs.WalkDir(&conformance.Manifests, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(&conformance.Manifests, path)
		if err != nil {
			return err
		}
		var docs []string
		for _, doc := range strings.Split(string(b), "\n---\n") {
			switch {
			case strings.Contains(doc, "\nkind: Deployment\n") && strings.Contains(doc, "\n  name: coredns\n"):
				coredns++
				continue
			case strings.Contains(doc, "\nkind: GatewayClass\n"):
				if strings.Contains(doc, "\n  labels:\n") {
					return fmt.Errorf("%s: a GatewayClass with labels: revisit conformanceManifests", path)
				}
				doc = strings.Replace(doc, "\nmetadata:\n", fmt.Sprintf("\nmetadata:\n  labels:\n    %s: %s\n",
					v1alpha1.ShardLabel, v1alpha1.DefaultShardName), 1)
			}
			docs = append(docs, echoBasic.ReplaceAllString(doc, echoImage))
		}
		out[path] = &fstest.MapFile{Data: []byte(strings.Join(docs, "\n---\n"))}
		return nil
	}))
	if coredns != 1 {
		t.Fatalf("%d CoreDNS Deployments in the suite's manifests, 1 expected: revisit conformanceManifests", coredns)
	}
	return out
}

// gatewayDialer dials what the suite asks for (a Gateway's status address: the shard's domain,
// which Traefik publishes) as a client outside the cluster would: the name resolved by the zone's
// DNS server, the connection from the fabric's client namespace. Nothing leaves the harness: a
// name the zone does not hold fails.
func gatewayDialer(d *framework.DNSServer, f *framework.Fabric,
) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		a, err := d.Lookup(ctx, host, dns.TypeA)
		if err != nil {
			return nil, err
		}
		if len(a.Values) == 0 {
			return nil, fmt.Errorf("%s: %v from the zone's DNS server", host, a)
		}
		return f.Dial(ctx, network, net.JoinHostPort(a.Values[0], port))
	}
}
