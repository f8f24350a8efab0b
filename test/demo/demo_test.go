//go:build demo

// Package demo is `make demo`: Shardgate on a local embedded default, running until Ctrl-C.
// It is a test binary only because the harness lives in test/framework; the build tag keeps it
// out of `make test`.
package demo

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/test/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

func TestDemo(t *testing.T) {
	ctx := context.Background()
	say("starting a seed and two user clusters with simulated nodes, BIND and external-dns")
	env := framework.StartEnvironment(t, framework.EnvironmentOptions{UserClusters: 2, SimulatedNodes: true, DNS: true})
	say("starting seed-controller --dns-zone=%s", env.DNS.Zone)
	framework.StartController(t, env.Seed, "--dns-zone="+env.DNS.Zone)

	// One HostNetwork router per node: DNS follows the nodes running a ready router.
	must(t, env.Seed.Client.Create(ctx, &v1alpha1.IngressProfile{ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: v1alpha1.IngressProfileSpec{Shards: []v1alpha1.ShardSpec{{Name: v1alpha1.DefaultShardName, Replicas: ptr.To[int32](3)}}}}))
	for i, u := range env.Users {
		id := fmt.Sprintf("demo%d", i+1)
		for j := 1; j <= 3; j++ {
			must(t, u.AddNode(ctx, framework.NodeSpec{Name: fmt.Sprintf("node-%d", j), InternalIP: fmt.Sprintf("127.0.%d.%d", 20+i, j)}))
		}
		kc, err := u.Kubeconfig("shardgate", "system:masters")
		must(t, err)
		must(t, env.Seed.Client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: id, Labels: map[string]string{v1alpha1.KubeconfigSecretLabel: "true"}},
			Data:       map[string][]byte{"value": kc},
		}))
	}
	for i, u := range env.Users {
		id := fmt.Sprintf("demo%d", i+1)
		host := "app." + id + "." + env.DNS.Zone
		say("%s: sample app behind Ingress %s, routers as real Traefik processes on the node addresses", id, host)
		backend := framework.StartBackend(t, fmt.Sprintf("127.0.2.%d", 10+i), "sample app in "+id)
		must(t, framework.ExposeBackend(ctx, u, "default", "web", backend))
		must(t, u.Client.Create(ctx, demoIngress(host)))
		framework.StartRouters(ctx, t, u, v1alpha1.DefaultShardName)
	}
	say("ready. Try: dig @127.0.0.1 -p %d anything.demo1.%s   (Ctrl-C stops every process)", env.DNS.Port, env.DNS.Zone)
	say("every 30 s one node of demo1 flips readiness, to show DNS following it")
	flip := time.NewTicker(30 * time.Second)
	show := time.NewTicker(3 * time.Second)
	notReady := false
	for {
		summary(ctx, t, env)
		select {
		case <-flip.C:
			notReady = !notReady
			must(t, env.Users[0].SetNodeReady(ctx, "node-2", !notReady))
			say("demo1/node-2 Ready=%v", !notReady)
		case <-show.C:
		}
	}
}

func summary(ctx context.Context, t *testing.T, env *framework.Environment) {
	list := &v1alpha1.ClusterIngressList{}
	must(t, env.Seed.Client.List(ctx, list))
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s  %-8s %-22s %-11s %-9s %s\n", time.Now().Format("15:04:05"), "CLUSTER", "DOMAIN", "READY NODES", "REACHABLE", "DNS ANSWER (BIND)")
	for _, ci := range list.Items {
		reach := "?"
		if c := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionClusterReachable); c != nil {
			reach = string(c.Status)
		}
		ans := "-"
		if ci.Status.Domain != "" {
			if a, err := env.DNS.Lookup(ctx, "anything."+ci.Status.Domain, dns.TypeA); err == nil {
				ans = fmt.Sprintf("anything.%s -> %s", ci.Status.Domain, a)
			}
		}
		fmt.Fprintf(&b, "          %-8s %-22s %-11d %-9s %s\n", ci.Name, ci.Status.Domain, ci.Status.ReadyNodeCount, reach, ans)
		if ci.Status.Domain != "" {
			fmt.Fprintf(&b, "          %8s %s\n", "", fetch(ctx, env, "app."+ci.Status.Domain))
		}
	}
	fmt.Fprint(os.Stdout, b.String())
}

func say(format string, args ...any) { fmt.Printf("[demo] "+format+"\n", args...) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// fetch resolves host through BIND and GETs it from the first address: the real ingress path.
func fetch(ctx context.Context, env *framework.Environment, host string) string {
	a, err := env.DNS.Lookup(ctx, host, dns.TypeA)
	if err != nil || len(a.Values) == 0 {
		return fmt.Sprintf("http://%s/ -> no address (%v)", host, err)
	}
	c := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{Proxy: nil}}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+a.Values[0]+"/", nil)
	req.Host = host
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Sprintf("http://%s/ via %s -> %v", host, a.Values[0], err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	return fmt.Sprintf("http://%s/ via %s -> %d %s", host, a.Values[0], resp.StatusCode, strings.TrimSpace(string(body)))
}

func demoIngress(host string) *networkingv1.Ingress {
	pt := networkingv1.PathTypePrefix
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}, // the allocator picks the shard
		Spec: networkingv1.IngressSpec{IngressClassName: ptr.To(names.IngressClassName), Rules: []networkingv1.IngressRule{{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{
			HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &pt,
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}},
	}
}
