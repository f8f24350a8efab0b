//go:build demo

// Package demo is `make demo`: Shardgate on a local embedded default, running until Ctrl-C.
// It is a test binary only because the harness lives in test/framework; the build tag keeps it
// out of `make test`.
package demo

import (
	"context"
	"fmt"
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
	say("starting a seed and two user clusters with three real nodes each (kubelet + containerd in network namespaces), BIND and external-dns")
	node := func(j int) framework.RealNodeSpec { return framework.RealNodeSpec{Name: fmt.Sprintf("node-%d", j)} }
	env := framework.StartEnvironment(t, framework.EnvironmentOptions{UserClusters: 2, DNS: true,
		RealNodes: [][]framework.RealNodeSpec{{node(1), node(2), node(3)}, {node(1), node(2), node(3)}}})
	say("starting seed-controller --dns-zone=%s", env.DNS.Zone)
	framework.StartController(t, env.Seed, "--dns-zone="+env.DNS.Zone)

	// One HostNetwork router per node, as real pods: DNS follows the nodes running a ready router.
	must(t, env.Seed.Client.Create(ctx, &v1alpha1.IngressProfile{ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: v1alpha1.IngressProfileSpec{DNS: v1alpha1.DNSSettings{TTL: 10}, Shards: []v1alpha1.ShardSpec{{Name: v1alpha1.DefaultShardName,
			Replicas: ptr.To[int32](3), Image: framework.TraefikImage, ImagePullPolicy: corev1.PullNever}}}}))
	for i, u := range env.Users {
		id := fmt.Sprintf("demo%d", i+1)
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
		say("%s: sample app (2 pods) behind Ingress %s; Shardgate's Traefik routers run as pods on the nodes", id, host)
		must(t, framework.DeployBackend(ctx, u, "default", "web", 2))
		must(t, u.Client.Create(ctx, demoIngress(host)))
	}
	say("ready. Try: dig @127.0.0.1 -p %d anything.demo1.%s   (Ctrl-C stops every process)", env.DNS.Port, env.DNS.Zone)
	say("HTTP goes from a client network namespace on each cluster's node network (10.123.0.0/24)")
	say("every 30 s node-2 of demo1 is cordoned or uncordoned, to show DNS following it")
	flip := time.NewTicker(30 * time.Second)
	show := time.NewTicker(3 * time.Second)
	cordoned := false
	for {
		summary(ctx, t, env)
		select {
		case <-flip.C:
			cordoned = !cordoned
			must(t, env.Users[0].CordonNode(ctx, "node-2", cordoned))
			say("demo1/node-2 cordoned=%v", cordoned)
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
			f := env.Fabrics[0]
			if ci.Name == "demo2" {
				f = env.Fabrics[1]
			}
			fmt.Fprintf(&b, "          %8s %s\n", "", fetch(ctx, env.DNS, f, "app."+ci.Status.Domain))
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

// fetch resolves host through BIND and GETs it from the first address, from the cluster's
// client namespace: the real ingress path.
func fetch(ctx context.Context, dnsSrv *framework.DNSServer, f *framework.Fabric, host string) string {
	a, err := dnsSrv.Lookup(ctx, host, dns.TypeA)
	if err != nil || len(a.Values) == 0 {
		return fmt.Sprintf("http://%s/ -> no address (%v)", host, err)
	}
	code, body, err := f.Get(ctx, a.Values[0]+":80", host)
	if err != nil {
		return fmt.Sprintf("http://%s/ via %s -> %v", host, a.Values[0], err)
	}
	if len(body) > 200 {
		body = body[:200]
	}
	return fmt.Sprintf("http://%s/ via %s -> %d %s", host, a.Values[0], code, strings.TrimSpace(body))
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
