package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/test/framework"
)

// AllocationSpecInput is what AllocationSpec runs on.
type AllocationSpecInput struct {
	Seed       *framework.ControlPlane
	User       *framework.ControlPlane
	DNS        *framework.DNSServer
	Controller *framework.Controller
	// Fabric holds the user cluster's real nodes n1 (role general), n2 (edge) and n3 (team):
	// routers and backends run there as real pods.
	Fabric *framework.Fabric
}

// AllocationSpec proves that users never pick a router: every Ingress lands on a shard by the
// profile's strategy, gets its final hosts, is served by that shard's Traefik running as real pods
// (the rendered spec, on real kubelets), tells its owner where it landed, and bad claims are
// refused with a reason, by Shardgate or by the API server.
func AllocationSpec(ctx context.Context, t *testing.T, inputGetter func() AllocationSpecInput) {
	in := inputGetter()
	seed, u, zone := in.Seed, in.User, in.DNS.Zone
	sel := map[string]string{"ingress": "allocated"}
	shards := []v1alpha1.ShardSpec{
		realRouter(v1alpha1.ShardSpec{Name: v1alpha1.DefaultShardName, NodeSelector: map[string]string{"role": "general"}}),
		realRouter(v1alpha1.ShardSpec{Name: "edge", NodeSelector: map[string]string{"role": "edge"}}),
		realRouter(v1alpha1.ShardSpec{Name: "team", NodeSelector: map[string]string{"role": "team"}}),
	}
	// A short TTL keeps the routers' preStop delay (TTL + 15 s) short when a shard goes.
	p := &v1alpha1.IngressProfile{ObjectMeta: metav1.ObjectMeta{Name: "allocated"}, Spec: v1alpha1.IngressProfileSpec{
		ClusterSelector: metav1.LabelSelector{MatchLabels: sel}, Shards: shards, DNS: v1alpha1.DNSSettings{TTL: 5},
		Allocation: v1alpha1.AllocationSettings{Strategy: "RoundRobin"}}}
	must(t, seed.Client.Create(ctx, p))
	registerCAPICluster(ctx, t, seed, "default", "a1", u, sel, nil)
	domain := "a1." + zone
	for _, s := range []string{v1alpha1.DefaultShardName, "edge", "team"} {
		must(t, framework.WaitRouters(ctx, u, names.Namespace, names.RouterName(s)))
	}
	waitCondition(ctx, t, seed, key("a1"), v1alpha1.ConditionShardsAvailable, metav1.ConditionTrue, v1alpha1.ReasonShardsAvailable)

	for _, ns := range []string{"ns-a", "ns-b"} {
		must(t, u.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
		must(t, framework.DeployBackend(ctx, u, ns, "web", 1))
	}
	get := func(ip, host string) (int, string) { return fabricGet(ctx, in.Fabric, ip, host) }

	allocated := func(t *testing.T, ns, name string) *networkingv1.Ingress {
		t.Helper()
		var ing *networkingv1.Ingress
		eventually(ctx, t, 30*time.Second, func() (bool, string) {
			ing = &networkingv1.Ingress{}
			if err := u.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, ing); err != nil {
				return false, err.Error()
			}
			return ing.Annotations[v1alpha1.AllocationAnnotation] == v1alpha1.AllocationAllocated,
				fmt.Sprintf("%s/%s: allocation %q", ns, name, ing.Annotations[v1alpha1.AllocationAnnotation])
		})
		return ing
	}
	rejected := func(t *testing.T, ns, name, reason string) {
		t.Helper()
		eventually(ctx, t, 30*time.Second, func() (bool, string) {
			ing := &networkingv1.Ingress{}
			if err := u.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, ing); err != nil {
				return false, err.Error()
			}
			got := ing.Annotations[v1alpha1.AllocationAnnotation]
			return strings.HasPrefix(got, v1alpha1.AllocationRejected) && strings.Contains(got, reason) && ing.Labels[v1alpha1.ShardLabel] == "",
				fmt.Sprintf("%s/%s: allocation %q, label %q; want rejected with %q", ns, name, got, ing.Labels[v1alpha1.ShardLabel], reason)
		})
	}
	serves := func(t *testing.T, host, via string) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_, err := in.DNS.WaitForAnswer(wctx, via, dns.TypeA, func(a framework.Answer) bool { return len(a.Values) > 0 })
		must(t, err)
		// Resolved again on every try: until a new shard's records are in BIND, its names fall
		// under the cluster's wildcard and answer another shard's nodes.
		eventually(ctx, t, 20*time.Second, func() (bool, string) {
			a, err := in.DNS.Lookup(ctx, via, dns.TypeA)
			if err != nil || len(a.Values) == 0 {
				return false, fmt.Sprintf("%s: no answer (%v)", via, err)
			}
			code, body := get(a.Values[0], host)
			return code == 200 && strings.Contains(body, "hello from web"), fmt.Sprintf("%s via %s: %d %q", host, a.Values[0], code, body)
		})
	}

	apps := []string{"app1", "app2", "app3", "app4", "app5", "app6"}
	t.Run("ingresses in two namespaces are spread over three shards and served", func(t *testing.T) {
		for i, name := range apps {
			ns := []string{"ns-a", "ns-b"}[i%2]
			must(t, u.Client.Create(ctx, routeIngress(ns, name, "")))
		}
		count := map[string]int{}
		for i, name := range apps {
			ns := []string{"ns-a", "ns-b"}[i%2]
			ing := allocated(t, ns, name)
			shard := ing.Labels[v1alpha1.ShardLabel]
			count[shard]++
			label, _ := names.DefaultHostLabel(ns, name)
			host := label + "." + names.ShardDomain(shard, domain)
			if ing.Spec.Rules[0].Host != host || ing.Annotations[v1alpha1.HostsAnnotation] != host {
				t.Fatalf("%s: default host %q / %q, want %s", name, ing.Spec.Rules[0].Host, ing.Annotations[v1alpha1.HostsAnnotation], host)
			}
			eventually(ctx, t, 20*time.Second, func() (bool, string) {
				got := &networkingv1.Ingress{}
				_ = u.Client.Get(ctx, client.ObjectKeyFromObject(ing), got)
				lb := got.Status.LoadBalancer.Ingress
				return len(lb) == 1 && lb[0].Hostname == names.ShardDomain(shard, domain), fmt.Sprintf("ADDRESS %+v", lb)
			})
			serves(t, host, host)
		}
		if count["default"] != 2 || count["edge"] != 2 || count["team"] != 2 {
			t.Fatalf("RoundRobin spread %v, want 2 per shard", count)
		}
		// Each decision is told once: one Allocated Event per Ingress, however many passes ran.
		perIngress := ingressEvents(ctx, t, u.Client, v1alpha1.AllocationAllocated)
		for i, name := range apps {
			if k := []string{"ns-a", "ns-b"}[i%2] + "/" + name; perIngress[k] != 1 {
				t.Errorf("%s: %d Allocated events, want 1", k, perIngress[k])
			}
		}
	})

	t.Run("an ingress with only a default backend gets its default host and is served", func(t *testing.T) {
		only := routeIngress("ns-a", "plain", "")
		only.Spec.DefaultBackend = &only.Spec.Rules[0].HTTP.Paths[0].Backend
		only.Spec.Rules = nil
		must(t, u.Client.Create(ctx, only))
		ing := allocated(t, "ns-a", "plain")
		label, _ := names.DefaultHostLabel("ns-a", "plain")
		host := label + "." + names.ShardDomain(ing.Labels[v1alpha1.ShardLabel], domain)
		if len(ing.Spec.Rules) != 1 || ing.Spec.Rules[0].Host != host || ing.Annotations[v1alpha1.HostsAnnotation] != host {
			t.Fatalf("rules %+v, hosts %q; want one rule for %s", ing.Spec.Rules, ing.Annotations[v1alpha1.HostsAnnotation], host)
		}
		serves(t, host, host)
		// With the rule in place Traefik builds no catch-all router from the default backend: an
		// unclaimed name of the same shard is not served by this namespace's backend.
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		a, err := in.DNS.WaitForAnswer(wctx, host, dns.TypeA, func(a framework.Answer) bool { return len(a.Values) > 0 })
		must(t, err)
		unclaimed := "unclaimed." + names.ShardDomain(ing.Labels[v1alpha1.ShardLabel], domain)
		if code, body := get(a.Values[0], unclaimed); code != 404 {
			t.Fatalf("%s: %d %q, want 404 (no catch-all on a shared shard)", unclaimed, code, body)
		}
	})

	t.Run("a custom host gets a CNAME target and is served through it", func(t *testing.T) {
		must(t, u.Client.Create(ctx, routeIngress("ns-a", "shop", "shop.example.org")))
		ing := allocated(t, "ns-a", "shop")
		target := ing.Annotations[v1alpha1.CNAMETargetAnnotation]
		if target != names.ShardDomain(ing.Labels[v1alpha1.ShardLabel], domain) {
			t.Fatalf("CNAME target %q for shard %s", target, ing.Labels[v1alpha1.ShardLabel])
		}
		serves(t, "shop.example.org", target)
	})

	t.Run("bad claims are refused with a reason; the owner keeps its traffic", func(t *testing.T) {
		must(t, u.Client.Create(ctx, routeIngress("ns-b", "steal", "shop.example.org")))
		must(t, u.Client.Create(ctx, routeIngress("ns-b", "wild", "*.example.org")))
		must(t, u.Client.Create(ctx, routeIngress("ns-b", "foreign", "app.other."+zone)))
		rejected(t, "ns-b", "steal", "already served for namespace ns-a")
		rejected(t, "ns-b", "wild", "wildcard")
		rejected(t, "ns-b", "foreign", "another cluster")
		// A user setting the shard label by hand is refused by the API server.
		byHand := routeIngress("ns-b", "byhand", "")
		byHand.Labels = map[string]string{v1alpha1.ShardLabel: "edge"}
		err := u.Client.Create(ctx, byHand)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), v1alpha1.ShardLabel) {
			t.Fatalf("hand-set shard label: %v, want Forbidden by the admission policy", err)
		}
		ing := allocated(t, "ns-a", "shop")
		serves(t, "shop.example.org", ing.Annotations[v1alpha1.CNAMETargetAnnotation])
	})

	t.Run("an ingress moved to another class is released", func(t *testing.T) {
		must(t, u.Client.Create(ctx, routeIngress("ns-b", "leaving", "")))
		ing := allocated(t, "ns-b", "leaving")
		update(ctx, t, u.Client, ing, func(ing *networkingv1.Ingress) { ing.Spec.IngressClassName = ptr.To("other") })
		eventually(ctx, t, 30*time.Second, func() (bool, string) {
			got := &networkingv1.Ingress{}
			must(t, u.Client.Get(ctx, client.ObjectKeyFromObject(ing), got))
			_, labelled := got.Labels[v1alpha1.ShardLabel]
			_, annotated := got.Annotations[v1alpha1.AllocationAnnotation]
			return !labelled && !annotated, fmt.Sprintf("labels %v annotations %v", got.Labels, got.Annotations)
		})
		eventually(ctx, t, 10*time.Second, func() (bool, string) {
			return ingressEvents(ctx, t, u.Client, v1alpha1.AllocationReleased)["ns-b/leaving"] == 1, "no Released event"
		})
	})

	t.Run("restarting the controller moves nothing; removing a shard moves only its ingresses", func(t *testing.T) {
		before := shardsOf(ctx, t, u)
		must(t, in.Controller.Restart())
		time.Sleep(5 * time.Second)
		if after := shardsOf(ctx, t, u); !equalMaps(before, after) {
			t.Fatalf("restart moved allocations:\n before %v\n after  %v", before, after)
		}
		updateShards(ctx, t, seed, "allocated", shards[:2])
		eventually(ctx, t, 30*time.Second, func() (bool, string) {
			now := shardsOf(ctx, t, u)
			for k, s := range before {
				if s == "team" && (now[k] == "team" || now[k] == "") {
					return false, fmt.Sprintf("%s still on %q", k, now[k])
				}
				if s != "team" && now[k] != s {
					return false, fmt.Sprintf("%s moved from %s to %s", k, s, now[k])
				}
			}
			return true, ""
		})
		// The pass creates its Events after its writes (allocation's writePass).
		eventually(ctx, t, 20*time.Second, func() (bool, string) {
			return len(ingressEvents(ctx, t, u.Client, v1alpha1.AllocationMoved)) > 0,
				"no Moved event for the re-allocated ingresses"
		})
		// The moved Ingresses show their new shard's address, published by its router.
		for k, s := range before {
			if s != "team" {
				continue
			}
			ns, name, _ := strings.Cut(k, "/")
			eventually(ctx, t, 30*time.Second, func() (bool, string) {
				got := &networkingv1.Ingress{}
				must(t, u.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, got))
				want := names.ShardDomain(got.Labels[v1alpha1.ShardLabel], domain)
				lb := got.Status.LoadBalancer.Ingress
				return len(lb) == 1 && lb[0].Hostname == want, fmt.Sprintf("%s: ADDRESS %+v, want %s", k, lb, want)
			})
		}
	})
}

func TestAllocation(t *testing.T) {
	t.Parallel() // see main_test.go
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	env := framework.StartEnvironment(t, framework.EnvironmentOptions{UserClusters: 1, DNS: true,
		RealNodes: [][]framework.RealNodeSpec{{
			{Name: "n1", Labels: map[string]string{"role": "general"}},
			{Name: "n2", Labels: map[string]string{"role": "edge"}},
			{Name: "n3", Labels: map[string]string{"role": "team"}},
		}}})
	ctrl := framework.StartController(t, env.Seed, "--dns-zone="+env.DNS.Zone)
	AllocationSpec(ctx, t, func() AllocationSpecInput {
		return AllocationSpecInput{Seed: env.Seed, User: env.Users[0], DNS: env.DNS, Controller: ctrl, Fabric: env.Fabrics[0]}
	})
}

// realRouter makes a shard run the harness' Traefik image, which real nodes have and never pull.
func realRouter(s v1alpha1.ShardSpec) v1alpha1.ShardSpec {
	s.Image, s.ImagePullPolicy = framework.TraefikImage, corev1.PullNever
	return s
}

// fabricGet sends GET / for host to ip:80 from the fabric's client namespace (outside the
// cluster) and returns the status and body (0 and the error on a transport error).
func fabricGet(ctx context.Context, f *framework.Fabric, ip, host string) (int, string) {
	code, body, err := f.Get(ctx, ip+":80", host)
	if err != nil {
		return 0, err.Error()
	}
	return code, body
}

// ingressEvents counts the Events with reason on each Ingress (key namespace/name).
func ingressEvents(ctx context.Context, t testing.TB, c client.Client, reason string) map[string]int {
	t.Helper()
	evs := &corev1.EventList{}
	if err := c.List(ctx, evs); err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, e := range evs.Items {
		if e.Reason == reason && e.InvolvedObject.Kind == "Ingress" {
			out[e.InvolvedObject.Namespace+"/"+e.InvolvedObject.Name]++
		}
	}
	return out
}

func routeIngress(ns, name, host string) *networkingv1.Ingress {
	ing := shardIngress(name, host)
	ing.Namespace = ns
	ing.Spec.IngressClassName = ptr.To(names.IngressClassName)
	return ing
}

func shardsOf(ctx context.Context, t *testing.T, u *framework.ControlPlane) map[string]string {
	l := &networkingv1.IngressList{}
	must(t, u.Client.List(ctx, l))
	out := map[string]string{}
	for _, i := range l.Items {
		if i.Annotations[v1alpha1.AllocationAnnotation] == v1alpha1.AllocationAllocated {
			out[i.Namespace+"/"+i.Name] = i.Labels[v1alpha1.ShardLabel]
		}
	}
	return out
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
