package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusterview"
	"github.com/shardgate/shardgate/pkg/kubectlplugin"
	"github.com/shardgate/shardgate/test/framework"
)

// TestSeeIt: what a seed operator and a user-cluster owner see. Two user clusters, one Ready
// (DNS verified at real BIND) and one without ingress nodes; in the ready one an Ingress with a
// default host and one refused for hijacking a host. kubectl-shardgate (the built binary)
// explains both against the user cluster and lists the clusters against the seed; the status page
// refuses requests without a token or without the permission, and headless Chromium, through an
// authenticating proxy like the one an operator puts in front of it, shows both clusters, keeping
// a screenshot in the run directory.
func TestSeeIt(t *testing.T) {
	t.Parallel() // see main_test.go
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	env := framework.StartEnvironment(t, framework.EnvironmentOptions{UserClusters: 2, SimulatedNodes: true, DNS: true})
	seed, alpha, beta, zone := env.Seed, env.Users[0], env.Users[1], env.DNS.Zone
	ctl := framework.StartController(t, seed, "--dns-zone="+zone, "--dns-verify-servers="+env.DNS.Addr, "--dns-verify-interval=2s")
	sel := map[string]string{"see": "yes"}
	createProfile(ctx, t, seed, "see", sel, v1alpha1.DNSSettings{TTL: 5}, v1alpha1.ShardSpec{Name: v1alpha1.DefaultShardName, Publishing: v1alpha1.PublishNodePort})
	addNodes(ctx, t, alpha, nodeSpec("a1", "127.0.41.1"), nodeSpec("a2", "127.0.41.2"))
	registerKubeconfigSecret(ctx, t, seed, "default", "alpha", "alpha", alpha, sel)
	registerKubeconfigSecret(ctx, t, seed, "default", "beta", "beta", beta, sel) // no nodes: not Ready
	waitCondition(ctx, t, seed, key("alpha"), v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReady)
	waitCondition(ctx, t, seed, key("beta"), v1alpha1.ConditionDNSPublished, metav1.ConditionFalse, v1alpha1.ReasonNoReadyNodes)
	eventually(ctx, t, 30*time.Second, func() (bool, string) {
		v := getCI(ctx, t, seed, key("alpha")).Status.DNSVerifiedBy
		return strings.Join(v, ",") == env.DNS.Addr, fmt.Sprintf("dnsVerifiedBy %v", v)
	})

	domain := "alpha." + zone
	for _, ns := range []string{"team", "other"} {
		must(t, alpha.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	must(t, alpha.Client.Create(ctx, routeIngress("team", "web", "")))
	must(t, alpha.Client.Create(ctx, routeIngress("team", "app", "app."+domain)))
	allocatedIn(ctx, t, alpha, "team", "web")
	allocatedIn(ctx, t, alpha, "team", "app")
	must(t, alpha.Client.Create(ctx, routeIngress("other", "thief", "app."+domain)))
	eventually(ctx, t, 30*time.Second, func() (bool, string) {
		ing := &networkingv1.Ingress{}
		must(t, alpha.Client.Get(ctx, client.ObjectKey{Namespace: "other", Name: "thief"}, ing))
		a := ing.Annotations[v1alpha1.AllocationAnnotation]
		return strings.HasPrefix(a, "Rejected"), a
	})

	plugin, err := framework.PluginBinary()
	must(t, err)
	dir := framework.TestDir(t)
	// Each kubeconfig in a directory of its own: WriteKubeconfig names its file "kubeconfig".
	alphaKC, err := alpha.WriteKubeconfig(filepath.Join(dir, "alpha-owner"), "alpha-owner")
	must(t, err)
	seedKC, err := seed.WriteKubeconfig(filepath.Join(dir, "seed-operator"), "seed-operator")
	must(t, err)
	kubectlShardgate := func(t *testing.T, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, plugin, args...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("kubectl-shardgate %v: %v\n%s", args, err, errOut.String())
		}
		return out.String()
	}

	t.Run("kubectl shardgate explain: an allocated Ingress's hosts and their DNS answer", func(t *testing.T) {
		var e kubectlplugin.Explanation
		eventually(ctx, t, 30*time.Second, func() (bool, string) {
			out := kubectlShardgate(t, "--kubeconfig", alphaKC, "explain", "ingress/web", "-n", "team", "--dns-server", env.DNS.Addr, "-o", "json")
			e = kubectlplugin.Explanation{}
			must(t, json.Unmarshal([]byte(out), &e))
			return e.State == "Allocated" && len(e.Hosts) == 1 && strings.Join(e.Hosts[0].Addresses, ",") == "127.0.41.1,127.0.41.2", out
		})
		if e.Shard != v1alpha1.DefaultShardName || e.ShardDomain != domain || e.CNAMETarget != "" || !strings.HasSuffix(e.Hosts[0].Name, "."+domain) || !e.Hosts[0].UnderShardDomain {
			t.Fatalf("explanation %+v", e)
		}
		human := kubectlShardgate(t, "--kubeconfig", alphaKC, "explain", "ingress/web", "-n", "team", "--dns-server", env.DNS.Addr)
		t.Logf("kubectl shardgate explain ingress/web -n team:\n%s", human)
		for _, want := range []string{"State:", "Allocated", e.Hosts[0].Name, "127.0.41.1,127.0.41.2", "published by Shardgate"} {
			if !strings.Contains(human, want) {
				t.Errorf("human output lacks %q", want)
			}
		}
	})

	t.Run("kubectl shardgate explain: a rejected Ingress's reason", func(t *testing.T) {
		out := kubectlShardgate(t, "--kubeconfig", alphaKC, "explain", "ingress/thief", "-n", "other")
		t.Logf("kubectl shardgate explain ingress/thief -n other:\n%s", out)
		if !strings.Contains(out, "Rejected") || !strings.Contains(out, "host app."+domain+" is already served for namespace team") {
			t.Fatalf("the rejection is not explained:\n%s", out)
		}
	})

	t.Run("kubectl shardgate status and clusters", func(t *testing.T) {
		out := kubectlShardgate(t, "--kubeconfig", alphaKC, "status", "-o", "yaml")
		if !strings.Contains(out, "clusterDomain: "+domain) || !strings.Contains(out, "cnameTarget: "+domain) {
			t.Fatalf("status:\n%s", out)
		}
		table := kubectlShardgate(t, "--kubeconfig", seedKC, "clusters")
		t.Logf("kubectl shardgate clusters:\n%s", table)
		lines := strings.Split(table, "\n")
		// Not ready first, then by name.
		if len(lines) < 3 || !strings.HasPrefix(lines[1], "default    beta ") || !strings.Contains(lines[1], "NoReadyNodes") ||
			!strings.HasPrefix(lines[2], "default    alpha ") || !strings.Contains(lines[2], "Published(verified)") || !strings.Contains(table, "2 cluster(s), 1 not ready") {
			t.Fatalf("clusters table:\n%s", table)
		}
	})

	// The operator's permission: get ClusterIngresses; a viewer without it is refused.
	admin, viewer := statusPageAccounts(ctx, t, seed)
	page := "https://" + ctl.StatusAddr
	insecure := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed

	t.Run("the status page needs a token that may get ClusterIngresses", func(t *testing.T) {
		for _, tc := range []struct {
			token string
			want  int
		}{{"", http.StatusUnauthorized}, {"not-a-token", http.StatusUnauthorized}, {viewer, http.StatusForbidden}, {admin, http.StatusOK}} {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, page+"/api/v1/clusters", nil)
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := insecure.Do(req)
			must(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.want, body)
			}
			if tc.want == http.StatusOK {
				var p clusterview.Page
				must(t, json.Unmarshal(body, &p))
				if p.Total != 2 || p.NotReady != 1 || p.Clusters[0].Name != "beta" || len(p.Clusters[1].DNSVerifiedBy) != 1 {
					t.Fatalf("JSON page %+v", p)
				}
			}
		}
	})

	t.Run("the Grafana dashboard queries metrics the controller exposes", func(t *testing.T) {
		m, err := ctl.Metrics()
		must(t, err)
		// Certificates and routed IPs are off here: TestTLS and TestRoutedIP check theirs.
		checkDashboardMetrics(t, m, "shardgate_engaged", "shardgate_cluster_", "shardgate_dns", "controller_runtime_", "rest_client_")
	})

	t.Run("Chromium shows the clusters", func(t *testing.T) {
		chromium, err := framework.NewChromium(dir)
		must(t, err)
		// What an operator runs in front of the page (oauth2-proxy, kubectl port-forward and a
		// header): here a proxy that adds the admin's token.
		target, _ := url.Parse(page)
		proxy := &httputil.ReverseProxy{Transport: insecure.Transport, Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Header.Set("Authorization", "Bearer "+admin)
		}}
		front := httptest.NewServer(proxy)
		defer front.Close()

		dom, err := chromium.DumpDOM(ctx, front.URL+"/")
		must(t, err)
		for _, want := range []string{`data-cluster="default/alpha"`, `data-cluster="default/beta"`, domain, "1 not ready", "NoReadyNodes", ">verified<", "127.0.41.1 127.0.41.2"} {
			if !strings.Contains(dom, want) {
				t.Errorf("the page lacks %q", want)
			}
		}
		if strings.Index(dom, "default/beta") > strings.Index(dom, "default/alpha") {
			t.Error("the cluster that is not ready is not first")
		}
		shot, err := framework.ScreenshotPath("status-page")
		must(t, err)
		must(t, chromium.Screenshot(ctx, front.URL+"/", shot, 1400, 500))
		t.Logf("screenshot of the status page: %s", shot)
		dom, err = chromium.DumpDOM(ctx, front.URL+"/clusters/default/alpha")
		must(t, err)
		for _, want := range []string{"*." + domain, "DNSPublished", "ClusterReachable", "1/1", "the authoritative servers"} {
			if !strings.Contains(dom, want) {
				t.Errorf("the cluster page lacks %q", want)
			}
		}
		shot, err = framework.ScreenshotPath("status-page-alpha")
		must(t, err)
		must(t, chromium.Screenshot(ctx, front.URL+"/clusters/default/alpha", shot, 1400, 700))
	})
}

// statusPageAccounts returns tokens of two seed ServiceAccounts: one bound to a ClusterRole that
// may get ClusterIngresses, one with no permission at all.
func statusPageAccounts(ctx context.Context, t *testing.T, seed *framework.ControlPlane) (admin, viewer string) {
	t.Helper()
	for _, sa := range []string{"status-admin", "status-viewer"} {
		must(t, seed.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: sa}}))
	}
	must(t, seed.Client.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "shardgate-status-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"shardgate.io"}, Resources: []string{"clusteringresses"}, Verbs: []string{"get", "list"}}}}))
	must(t, seed.Client.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "shardgate-status-admin"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "shardgate-status-reader"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "default", Name: "status-admin"}}}))
	var err error
	admin, err = framework.ServiceAccountToken(seed, "default", "status-admin")
	must(t, err)
	viewer, err = framework.ServiceAccountToken(seed, "default", "status-viewer")
	must(t, err)
	return admin, viewer
}
