package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/test/framework"
)

// helm runs the pinned Helm CLI and returns its combined output.
func helm(t testing.TB, args ...string) (string, error) {
	t.Helper()
	tools, err := framework.LocateTools(framework.ToolHelm)
	if err != nil {
		t.Fatal(err)
	}
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tools.Path(framework.ToolHelm), args...)
	cmd.Dir = root
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

const chart = "charts/shardgate"

// TestChartRefusesBadValues: helm lint passes with a zone, and bad values fail install-time
// rendering with a message that names the value.
func TestChartRefusesBadValues(t *testing.T) {
	t.Parallel() // see main_test.go
	if out, err := helm(t, "lint", chart, "--set", "dns.zone=clusters.example.com"); err != nil {
		t.Fatalf("helm lint: %v\n%s", err, out)
	}
	// Several replicas share the clusters instead of standing by.
	out, err := helm(t, "template", "x", chart, "--set", "dns.zone=ok.example", "--set", "replicas=3", "--show-only", "templates/deployment.yaml")
	if err != nil || !strings.Contains(out, "- --sharding") || !strings.Contains(out, "- --leader-elect=false") || !strings.Contains(out, "POD_NAME") {
		t.Fatalf("replicas=3: %v\n%s", err, out)
	}
	// The opt-in dashboard: a ConfigMap Grafana's sidecar picks up, holding the dashboard JSON.
	out, err = helm(t, "template", "x", chart, "--set", "dns.zone=ok.example", "--set", "grafanaDashboard.enabled=true", "--show-only", "templates/grafana-dashboard.yaml")
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	cm := &corev1.ConfigMap{}
	must(t, yaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096).Decode(cm))
	var dashboard map[string]any
	if err := json.Unmarshal([]byte(cm.Data["shardgate.json"]), &dashboard); err != nil || dashboard["uid"] != "shardgate" || cm.Labels["grafana_dashboard"] != "1" {
		t.Fatalf("dashboard ConfigMap: %v %v %v", err, dashboard["uid"], cm.Labels)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "/dns/zone"},
		{[]string{"--set", "dns.zone=bad_zone"}, "/dns/zone"},
		{[]string{"--set", "dns.zone=ok.example", "--set", "replicas=0"}, "/replicas"},
		{[]string{"--set", "dns.zone=ok.example", "--set", "defaultProfile.emptyTargets=Sometimes"}, "/defaultProfile/emptyTargets"},
		{[]string{"--set", "dns.zone=ok.example", "--set", "defaultProfile.shards[0].name=Bad_Name"}, "/defaultProfile/shards/0/name"},
		{[]string{"--set", "dns.zone=ok.example", "--set", "tls.issuerRef.name=le", "--set", "tls.issuerRef.kind=Vault"}, "/tls/issuerRef/kind"},
		{[]string{"--set", "dns.zone=ok.example", "--set", "tls.acme.enabled=true"}, "/tls/acme/email"},
		{[]string{"--set", "dns.zone=ok.example", "--set", "tls.issuerRef.name=le", "--set", "tls.renewBefore=soon"}, "/tls/renewBefore"},
		{[]string{"--set", "dns.zone=ok.example", "--set", "canary.proxy=ftp://proxy:21"}, "/canary/proxy"},
		{[]string{"--set", "dns.zone=ok.example", "--set", "canary.refuseCIDRs={10.96.0.0/12,seed}"}, "/canary/refuseCIDRs/1"},
		{[]string{"--set", "dns.zone=ok.example", "--set", "externalDNS.enabled=true", "--set", "externalDNS.args={--policy=sync}"}, "may not set --policy"},
		{[]string{"--set", "dns.zone=ok.example", "--set", "externalDNS.enabled=true", "--set", "externalDNS.shares=2",
			"--set", "externalDNS.args={--txt-cache-interval=1m}"},
			"may not set --txt-cache-interval with externalDNS.shares > 1"},
	} {
		out, err := helm(t, append([]string{"template", "x", chart}, tt.args...)...)
		if err == nil || !strings.Contains(out, tt.want) {
			t.Errorf("helm template %v: err %v, want a message naming %s; got:\n%s", tt.args, err, tt.want, out)
		}
	}
}

// TestChartExternalDNSPublishesOnlyShardgatesEndpoints: the chart's external-dns reads only
// DNSEndpoints carrying the label Shardgate puts on its own, so a DNSEndpoint anyone else creates
// in the seed never reaches the shared zone.
func TestChartExternalDNSPublishesOnlyShardgatesEndpoints(t *testing.T) {
	t.Parallel() // see main_test.go
	out, err := helm(t, "template", "x", chart, "--set", "dns.zone=ok.example", "--set", "externalDNS.enabled=true",
		"--show-only", "templates/external-dns.yaml")
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	dec := yaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096)
	var args []string
	for {
		d := &appsv1.Deployment{}
		if err := dec.Decode(d); err != nil {
			break
		}
		if d.Kind == "Deployment" {
			args = d.Spec.Template.Spec.Containers[0].Args
		}
	}
	want := "--label-filter=" + v1alpha1.ManagedByLabel + "=" + v1alpha1.ManagedByValue
	if !slices.Contains(args, want) {
		t.Fatalf("external-dns args %v lack %s", args, want)
	}
	// The harness' external-dns (every spec's) publishes as fast as the chart's.
	for _, want := range []string{"--policy=sync", "--interval=500ms", "--kube-api-qps=200", "--kube-api-burst=400"} {
		if !slices.Contains(args, want) {
			t.Errorf("external-dns args %v lack %s, which the harness runs with", args, want)
		}
	}
}

// TestChartExternalDNSShares: with externalDNS.shares, each share's instance publishes its share's
// DNSEndpoints and never deletes, the last one also those labelled for a share that does not run
// or not labelled yet, so every DNSEndpoint Shardgate labels has exactly one fast publisher
// whatever the controller's --dns-shares; the janitor reads them all and deletes.
func TestChartExternalDNSShares(t *testing.T) {
	t.Parallel() // see main_test.go
	managed := labels.Set{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue}
	for _, n := range []int{1, 2, 3, 4} {
		rendered := chartExternalDNSArgs(t, "ok.example", fmt.Sprintf("externalDNS.shares=%d", n))
		if want := map[bool]int{true: 1, false: n + 1}[n == 1]; len(rendered) != want {
			t.Fatalf("externalDNS.shares=%d rendered %d Deployments, want %d", n, len(rendered), want)
		}
		janitor := rendered["x-shardgate-external-dns"]
		if n > 1 && (!slices.Contains(janitor, "--policy=sync") || !slices.Contains(janitor, "--interval=10s")) {
			t.Errorf("shares=%d: the janitor's args %v", n, janitor)
		}
		// Endpoints labelled by a controller with 1 to 6 shares, and one not labelled with a share.
		endpoints := []labels.Set{managed}
		for k := range 6 {
			endpoints = append(endpoints, labels.Merge(managed, labels.Set{v1alpha1.DNSShareLabel: fmt.Sprint(k)}))
		}
		for _, ep := range endpoints {
			var fast []string
			for name, args := range rendered {
				policy, sel := "", labels.Everything()
				for _, a := range args {
					if v, ok := strings.CutPrefix(a, "--policy="); ok {
						policy = v
					}
					if v, ok := strings.CutPrefix(a, "--label-filter="); ok {
						var err error
						if sel, err = labels.Parse(v); err != nil {
							t.Fatalf("%s: --label-filter=%s: %v", name, v, err)
						}
					}
				}
				if n > 1 && name == "x-shardgate-external-dns" {
					if !sel.Matches(ep) {
						t.Errorf("shares=%d: the janitor does not read %v", n, ep)
					}
					continue
				}
				if want := map[bool]string{true: "sync", false: "upsert-only"}[n == 1]; policy != want {
					t.Errorf("shares=%d: %s runs --policy=%s, want %s", n, name, policy, want)
				}
				if sel.Matches(ep) {
					fast = append(fast, name)
				}
			}
			if len(fast) != 1 {
				t.Errorf("shares=%d: a DNSEndpoint labelled %v is published fast by %v, want exactly one", n, ep, fast)
			}
		}
	}
	for _, bad := range [][]string{{"externalDNS.shares=0"}, {"externalDNS.shares=65"}, {"externalDNS.shares=x"},
		{"externalDNS.janitorInterval=10m"}, {"externalDNS.args={--policy=sync}"}, {"externalDNS.args={--label-filter=a=b}"},
		{"externalDNS.args={--txt-owner-id=other}"}} {
		args := []string{"template", "x", chart, "--set", "dns.zone=ok.example", "--set", "externalDNS.enabled=true"}
		for _, b := range bad {
			args = append(args, "--set", b)
		}
		if out, err := helm(t, args...); err == nil {
			t.Errorf("%v rendered:\n%s", bad, out)
		}
	}
	// The interval and the client budget may be replaced through args (external-dns refuses a flag
	// given twice); a cloud provider gets a minute by default.
	for _, tt := range []struct {
		set  []string
		want []string
	}{
		{[]string{"externalDNS.args={--interval=2s,--kube-api-qps=50}"}, []string{"--interval=2s", "--kube-api-qps=50"}},
		{[]string{"externalDNS.provider=aws"}, []string{"--interval=1m"}},
	} {
		for name, args := range chartExternalDNSArgs(t, "ok.example", tt.set...) {
			seen := map[string]int{}
			for _, a := range args {
				f, _, _ := strings.Cut(a, "=")
				seen[f]++
			}
			for f, c := range seen {
				if c > 1 && f != "--domain-filter" {
					t.Errorf("%v: %s gives %s %d times", tt.set, name, f, c)
				}
			}
			for _, w := range tt.want {
				if !slices.Contains(args, w) {
					t.Errorf("%v: %s args %v lack %s", tt.set, name, args, w)
				}
			}
		}
	}
}

// TestChartGrantsJobsPodsAndLeasesInItsNamespaceOnly: the ClusterRole grants no Jobs, pods or
// Leases; a Role in the release namespace (the controller's Job, leader-election and Lease
// namespace) does, bound to the chart's ServiceAccount.
func TestChartGrantsJobsPodsAndLeasesInItsNamespaceOnly(t *testing.T) {
	t.Parallel() // see main_test.go
	// The namespaces the controller uses them in: the leader-election namespace, and the Job
	// namespace, which is the pod's own unless a flag names another.
	out, err := helm(t, "template", "x", chart, "--namespace", "sg", "--set", "dns.zone=ok.example", "--set", "replicas=3",
		"--show-only", "templates/deployment.yaml")
	if err != nil || !strings.Contains(out, "- --leader-election-namespace=sg\n") || strings.Contains(out, "--routed-ip-job-namespace") {
		t.Fatalf("the controller's Lease or Job namespace is not the release namespace: %v\n%s", err, out)
	}
	out, err = helm(t, "template", "x", chart, "--namespace", "sg", "--set", "dns.zone=ok.example", "--show-only", "templates/rbac.yaml")
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	namespaced := map[string]bool{"batch/jobs": true, "/pods": true, "coordination.k8s.io/leases": true}
	grants := func(rules []rbacv1.PolicyRule) map[string]bool {
		got := map[string]bool{}
		for _, r := range rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					if namespaced[g+"/"+res] {
						got[g+"/"+res] = true
					}
				}
			}
		}
		return got
	}
	var role, binding bool
	for _, u := range manifests(out) {
		switch u.GetKind() {
		case "ClusterRole":
			cr := &rbacv1.ClusterRole{}
			must(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cr))
			if got := grants(cr.Rules); len(got) > 0 {
				t.Errorf("the ClusterRole grants %v in every namespace", got)
			}
		case "Role":
			r := &rbacv1.Role{}
			must(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, r))
			if r.Name == "x-shardgate" {
				role = r.Namespace == "sg" && len(grants(r.Rules)) == len(namespaced)
			}
		case "RoleBinding":
			b := &rbacv1.RoleBinding{}
			must(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, b))
			if b.Name == "x-shardgate" {
				binding = b.Namespace == "sg" && b.RoleRef.Kind == "Role" && b.RoleRef.Name == "x-shardgate" &&
					len(b.Subjects) == 1 && b.Subjects[0].Name == "x-shardgate" && b.Subjects[0].Namespace == "sg"
			}
		}
	}
	if !role || !binding {
		t.Fatalf("no Role granting %v in the release namespace (%v), or no binding of it to the ServiceAccount (%v):\n%s",
			namespaced, role, binding, out)
	}
}

// chartServiceAccount creates the chart's ServiceAccount and RBAC (templates/rbac.yaml) as a
// release in namespace, with set, and returns a kubeconfig of that ServiceAccount: specs run the
// controller with exactly the rights the chart gives it, without installing the whole chart.
func chartServiceAccount(ctx context.Context, t testing.TB, seed *framework.ControlPlane, namespace string, set ...string) []byte {
	t.Helper()
	out, err := helm(t, append([]string{"template", "sg", chart, "--namespace", namespace, "--set", "dns.zone=rbac.example",
		"--show-only", "templates/serviceaccount.yaml", "--show-only", "templates/rbac.yaml"}, set...)...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	if err := seed.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, u := range manifests(out) {
		must(t, seed.Client.Create(ctx, u))
	}
	token, err := framework.ServiceAccountToken(seed, namespace, "sg-shardgate")
	must(t, err)
	kc, err := framework.KubeconfigFor(seed.Host(), seed.Config.CAData, token)
	must(t, err)
	return kc
}

// TestChartInstallsAndConverges: the rendered chart passes a server-side dry-run against a real
// seed API server; helm install into that seed works; and the controller started with exactly
// the flags and the RBAC the chart gives it (its ServiceAccount's token) converges a user
// cluster's DNS through external-dns and BIND, and serves /metrics to a token bound to the chart's
// metrics-reader ClusterRole but not to one without it.
func TestChartInstallsAndConverges(t *testing.T) {
	t.Parallel() // see main_test.go
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	env := framework.StartEnvironment(t, framework.EnvironmentOptions{UserClusters: 1, SimulatedNodes: true, DNS: true})
	seed, zone := env.Seed, env.DNS.Zone
	set := []string{"--set", "dns.zone=" + zone, "--set", "externalDNS.enabled=true",
		"--set", "defaultProfile.shards[0].name=default", "--set", "defaultProfile.shards[0].publishing=NodePort"}

	// Server-side dry-run of every rendered object, the ACME Issuer and the profile's tls
	// included (against cert-manager's CRDs; no cert-manager runs here, so the install below
	// leaves TLS off).
	must(t, framework.InstallCertManagerCRDs(seed))
	must(t, seed.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shardgate"}}))
	tlsSet := []string{"--set", "tls.acme.enabled=true", "--set", "tls.acme.email=ops@" + zone, "--set", "tls.redirectHTTP=true", "--set", "tls.acme.waitInsteadOfSelfCheck=0s",
		"--set", "tls.acme.dns01.rfc2136.nameserver=" + env.DNS.Addr, "--set", "tls.acme.dns01.rfc2136.tsigKeyName=acme",
		"--set", "tls.acme.dns01.rfc2136.tsigSecretSecretRef.name=acme-tsig"}
	optIn := []string{"--set", "statusPage.enabled=true", "--set", "statusPage.certSecret=status-tls", "--set", "grafanaDashboard.enabled=true",
		"--set", "metrics.certSecret=metrics-tls"}
	kinds := dryRunChart(ctx, t, seed, append(append(slices.Clone(set), tlsSet...), optIn...))
	if len(kinds) < 10 || !slices.Contains(kinds, "Issuer/shardgate-acme") || !slices.Contains(kinds, "Service/shardgate-status") ||
		!slices.Contains(kinds, "ConfigMap/shardgate-dashboard") || !slices.Contains(kinds, "ClusterRole/shardgate-metrics-reader") {
		t.Fatalf("rendered: %v", kinds)
	}
	set = append(set, "--set", "statusPage.enabled=true", "--set", "canary.refuseCIDRs={10.96.0.0/12,10.244.0.0/16}")

	kc := filepath.Join(t.TempDir(), "kubeconfig")
	must(t, os.WriteFile(kc, mustKubeconfig(t, seed), 0o600))
	if out, err := helm(t, append([]string{"install", "shardgate", chart, "--kubeconfig", kc, "--namespace", "shardgate"}, set...)...); err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	d := &appsv1.Deployment{}
	must(t, seed.Client.Get(ctx, client.ObjectKey{Namespace: "shardgate", Name: "shardgate"}, d))
	var args []string
	webhookPort, err := framework.FreePort()
	must(t, err)
	for _, a := range d.Spec.Template.Spec.Containers[0].Args {
		// The harness binds metrics, health and the status page to loopback ports of its own, and
		// keeps the canary off (it would ask the machine's resolver for the test zone's names).
		if !strings.HasPrefix(a, "--metrics-bind-address") && !strings.HasPrefix(a, "--health-probe-bind-address") &&
			!strings.HasPrefix(a, "--status-bind-address") && !strings.HasPrefix(a, "--canary-") {
			if strings.HasPrefix(a, "--admission-webhook-bind-address=") {
				// The chart's :9443 on the host would collide with other specs': a loopback port
				// (the API server reaches no Service here; the webhook fails open).
				a = fmt.Sprintf("--admission-webhook-bind-address=127.0.0.1:%d", webhookPort)
			}
			args = append(args, a)
		}
	}
	token, err := framework.ServiceAccountToken(seed, "shardgate", "shardgate")
	must(t, err)
	saKC, err := framework.KubeconfigFor(seed.Host(), seed.Config.CAData, token)
	must(t, err)
	if !slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--status-bind-address=:8443") || !slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--canary-interval=1m") ||
		!slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--canary-refuse-cidrs=10.96.0.0/12,10.244.0.0/16") {
		t.Fatalf("statusPage.enabled or canary.refuseCIDRs without their flags: %v", d.Spec.Template.Spec.Containers[0].Args)
	}
	ctl := framework.StartControllerAs(t, seed, saKC, args...)

	u := env.Users[0]
	addNodes(ctx, t, u, nodeSpec("n1", "127.0.40.1"), nodeSpec("n2", "127.0.40.2"))
	// The chart's default: kubeconfig Secrets register clusters from the release namespace only.
	registerKubeconfigSecret(ctx, t, seed, "shardgate", "chart1", "chart1", u, nil)
	waitAnswer(ctx, t, env.DNS, "anything.chart1."+zone, framework.AnswerIs("127.0.40.1", "127.0.40.2"))
	waitCondition(ctx, t, seed, client.ObjectKey{Namespace: "shardgate", Name: "chart1"}, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReady)
	// The chart grants no cluster-wide Secret list or watch.
	if allowed(ctx, t, seed, "system:serviceaccount:shardgate:shardgate", "list", "secrets", "default") {
		t.Error("the chart's ServiceAccount may list Secrets outside the kubeconfig namespaces")
	}
	if !allowed(ctx, t, seed, "system:serviceaccount:shardgate:shardgate", "watch", "secrets", "shardgate") {
		t.Error("the chart's ServiceAccount may not watch kubeconfig Secrets in the release namespace")
	}
	// Jobs, pods and Leases only in the release namespace (the controller above elected itself
	// leader there with them).
	for _, a := range [][2]string{{"create", "coordination.k8s.io/leases"}, {"create", "batch/jobs"}, {"list", "pods"}} {
		if allowed(ctx, t, seed, "system:serviceaccount:shardgate:shardgate", a[0], a[1], "default") {
			t.Errorf("the chart's ServiceAccount may %s %s outside the release namespace", a[0], a[1])
		}
		if !allowed(ctx, t, seed, "system:serviceaccount:shardgate:shardgate", a[0], a[1], "shardgate") {
			t.Errorf("the chart's ServiceAccount may not %s %s in the release namespace", a[0], a[1])
		}
	}
	p := &v1alpha1.IngressProfile{}
	must(t, seed.Client.Get(ctx, client.ObjectKey{Name: "default"}, p))
	if p.Spec.DNS.Zone != zone {
		t.Fatalf("chart's profile zone %q", p.Spec.DNS.Zone)
	}
	// The chart's RBAC lets the status page review tokens: the ServiceAccount's own token (which
	// may get ClusterIngresses) reads the JSON view.
	insecure := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+ctl.StatusAddr+"/api/v1/clusters", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := insecure.Do(req)
	must(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"name": "chart1"`) {
		t.Fatalf("status page with the chart's RBAC: %d %s", resp.StatusCode, body)
	}
	// /metrics: the controller, with the chart's RBAC, reviews scrapers' tokens; a token bound to
	// the chart's ClusterRole shardgate-metrics-reader (as an operator binds Prometheus') reads
	// them, the controller's own token (which may get ClusterIngresses, not /metrics) is refused.
	m, err := ctl.Metrics()
	must(t, err)
	if !strings.Contains(m, "shardgate_engaged_clusters 1") {
		t.Errorf("metrics with the chart's reader role lack shardgate_engaged_clusters 1")
	}
	reader := &rbacv1.ClusterRole{}
	must(t, seed.Client.Get(ctx, client.ObjectKey{Name: "shardgate-metrics-reader"}, reader))
	if reader.Labels["app.kubernetes.io/managed-by"] != "Helm" {
		t.Errorf("the scraper is bound to a metrics-reader role the chart did not ship: %v", reader.Labels)
	}
	if code, body, err := ctl.ScrapeMetrics(token); err != nil || code != http.StatusForbidden {
		t.Errorf("metrics for a token without the reader role: %d %v %.200s", code, err, body)
	}
}

// dryRunChart renders the chart with set and server-side dry-runs every object against cp; it
// returns kind/name of each.
func dryRunChart(ctx context.Context, t *testing.T, cp *framework.ControlPlane, set []string) []string {
	t.Helper()
	out, err := helm(t, append([]string{"template", "shardgate", chart, "--namespace", "shardgate", "--include-crds"}, set...)...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	var kinds []string
	for _, u := range manifests(out) {
		kinds = append(kinds, u.GetKind()+"/"+u.GetName())
		if err := cp.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("dry-run"), client.ForceOwnership, client.DryRunAll); err != nil {
			t.Errorf("server-side dry-run of %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	return kinds
}

func mustKubeconfig(t *testing.T, cp *framework.ControlPlane) []byte {
	t.Helper()
	kc, err := cp.Kubeconfig("helm", "system:masters")
	must(t, err)
	return kc
}

// allowed asks the seed's authorizer whether user may verb resource ("group/resource" outside
// the core group) in namespace.
func allowed(ctx context.Context, t *testing.T, cp *framework.ControlPlane, user, verb, resource, namespace string) bool {
	t.Helper()
	group, res, ok := strings.Cut(resource, "/")
	if !ok {
		group, res = "", resource
	}
	r := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user,
		Groups:             []string{"system:serviceaccounts", "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: group, Resource: res, Namespace: namespace}}}
	must(t, cp.Client.Create(ctx, r))
	return r.Status.Allowed
}

// manifests are the objects of a multi-document YAML stream (helm template's output), empty
// documents left out.
func manifests(out string) []*unstructured.Unstructured {
	var objs []*unstructured.Unstructured
	dec := yaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			return objs
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}
