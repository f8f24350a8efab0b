package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/test/framework"
)

// ShardsSpecInput is what ShardsSpec runs on: a seed with external-dns and BIND, two user
// clusters, and the seed controller. The first cluster's nodes are real (n1, n2 role edge; n3,
// n4 role general: Nodes, on Fabric), so its routers really run; the second's are simulated.
type ShardsSpecInput struct {
	Seed       *framework.ControlPlane
	Users      []*framework.ControlPlane
	DNS        *framework.DNSServer
	Controller *framework.Controller
	Fabric     *framework.Fabric
	Nodes      []*framework.RealNode
}

// ShardsSpec proves that shards described once in a profile are deployed into every selected
// cluster, kept as described, and published in DNS by their own rules.
func ShardsSpec(ctx context.Context, t *testing.T, inputGetter func() ShardsSpecInput) {
	in := inputGetter()
	seed, zone := in.Seed, in.DNS.Zone
	sel := map[string]string{"ingress": "sharded"}
	shards := []v1alpha1.ShardSpec{
		realRouter(v1alpha1.ShardSpec{Name: v1alpha1.DefaultShardName, Replicas: ptr.To[int32](2), NodeSelector: map[string]string{"role": "general"}}),
		realRouter(v1alpha1.ShardSpec{Name: "edge", Replicas: ptr.To[int32](2), NodeSelector: map[string]string{"role": "edge"}}),
		realRouter(v1alpha1.ShardSpec{Name: "internal", Publishing: v1alpha1.PublishNodePort, NodeSelector: map[string]string{"role": "edge"}}),
	}
	// TTL 5 s: routers keep serving TTL + 15 s after they are told to stop (preStop).
	createProfile(ctx, t, seed, "sharded", sel, v1alpha1.DNSSettings{TTL: 5}, shards...)
	addNodes(ctx, t, in.Users[1],
		framework.NodeSpec{Name: "n1", InternalIP: "127.0.31.1", Labels: map[string]string{"role": "edge"}},
		framework.NodeSpec{Name: "n2", InternalIP: "127.0.31.2", Labels: map[string]string{"role": "edge"}},
		framework.NodeSpec{Name: "n3", InternalIP: "127.0.31.3", Labels: map[string]string{"role": "general"}},
		framework.NodeSpec{Name: "n4", InternalIP: "127.0.31.4", Labels: map[string]string{"role": "general"}})
	for i, u := range in.Users {
		registerCAPICluster(ctx, t, seed, "default", fmt.Sprintf("s%d", i+1), u, sel, nil)
	}
	// nodeIP is node j's (1-4) address in user cluster i.
	nodeIP := func(i, j int) string {
		if i == 0 {
			return in.Nodes[j-1].IP
		}
		return fmt.Sprintf("127.0.31.%d", j)
	}
	u1 := in.Users[0]
	get := func(ip, host string) (int, string) { return fabricGet(ctx, in.Fabric, ip, host) }
	answer := func(t *testing.T, name string, ips ...string) {
		t.Helper()
		waitAnswer(ctx, t, in.DNS, "anything."+name, framework.AnswerIs(ips...))
		waitAnswer(ctx, t, in.DNS, name, framework.AnswerIs(ips...))
	}

	t.Run("every shard runs and each publishes exactly its nodes", func(t *testing.T) {
		for i := range in.Users {
			id := fmt.Sprintf("s%d", i+1)
			ip := func(j int) string { return nodeIP(i, j) }
			answer(t, id+"."+zone, ip(3), ip(4))
			answer(t, "edge."+id+"."+zone, ip(1), ip(2))
			answer(t, "internal."+id+"."+zone, ip(1), ip(2))
			waitCondition(ctx, t, seed, key(id), v1alpha1.ConditionShardsAvailable, metav1.ConditionTrue, v1alpha1.ReasonShardsAvailable)
		}
		ci := getCI(ctx, t, seed, key("s1"))
		if len(ci.Status.Shards) != 3 || ci.Status.Shards[1].Name != "edge" || ci.Status.Shards[1].Domain != "edge.s1."+zone {
			t.Fatalf("status.shards: %+v", ci.Status.Shards)
		}
		info := &corev1.ConfigMap{}
		must(t, u1.Client.Get(ctx, client.ObjectKey{Namespace: names.UserInfoNamespace, Name: names.UserInfoName}, info))
		if info.Data["shard.edge.cnameTarget"] != "edge.s1."+zone || info.Data["clusterDomain"] != "s1."+zone {
			t.Fatalf("users are told: %+v", info.Data)
		}
		class := &networkingv1.IngressClass{}
		must(t, u1.Client.Get(ctx, client.ObjectKey{Name: names.IngressClassName}, class))
		if class.Spec.Controller != "traefik.io/ingress-controller" || class.Annotations["ingressclass.kubernetes.io/is-default-class"] != "true" {
			t.Fatalf("ingress class: %+v", class)
		}
	})

	t.Run("real traffic reaches a backend pod through BIND and the shard's own router pods", func(t *testing.T) {
		must(t, framework.DeployBackend(ctx, u1, "default", "web", 2))
		must(t, u1.Client.Create(ctx, shardIngress("web-edge", "app.edge.s1."+zone)))
		must(t, u1.Client.Create(ctx, shardIngress("web-default", "app.s1."+zone)))
		// HA routers spread one per node (anti-affinity), all Ready on real kubelets.
		for _, shard := range []string{"edge", v1alpha1.DefaultShardName} {
			must(t, framework.WaitRouters(ctx, u1, names.Namespace, names.RouterName(shard)))
			pods := &corev1.PodList{}
			must(t, u1.Client.List(ctx, pods, client.InNamespace(names.Namespace), client.MatchingLabels{v1alpha1.ShardLabel: shard}))
			nodes := map[string]bool{}
			for _, p := range pods.Items {
				nodes[p.Spec.NodeName] = true
			}
			if len(pods.Items) != 2 || len(nodes) != 2 {
				t.Fatalf("shard %s: %d router pods on nodes %v, want 2 on 2 nodes", shard, len(pods.Items), nodes)
			}
		}
		// Every address BIND gives for the edge host serves it through the edge routers.
		a, err := in.DNS.Lookup(ctx, "app.edge.s1."+zone, dns.TypeA)
		must(t, err)
		if len(a.Values) != 2 {
			t.Fatalf("app.edge.s1: %s", a)
		}
		for _, ip := range a.Values {
			eventually(ctx, t, 20*time.Second, func() (bool, string) {
				code, body := get(ip, "app.edge.s1."+zone)
				return code == 200 && strings.Contains(body, "hello from web"), fmt.Sprintf("%s: %d %q", ip, code, body)
			})
			// A host of another shard is not served by this shard.
			if code, _ := get(ip, "app.s1."+zone); code != 404 {
				t.Fatalf("edge router on %s served the default shard's host: %d", ip, code)
			}
		}
		d, err := in.DNS.Lookup(ctx, "app.s1."+zone, dns.TypeA)
		must(t, err)
		for _, ip := range d.Values {
			eventually(ctx, t, 20*time.Second, func() (bool, string) {
				code, body := get(ip, "app.s1."+zone)
				return code == 200 && strings.Contains(body, "hello from web"), fmt.Sprintf("%s: %d %q", ip, code, body)
			})
		}
		// Behind a Service the router is not root and holds no capability; on the host network it
		// is root with NET_BIND_SERVICE alone. What runs is what was rendered.
		must(t, framework.WaitRouters(ctx, u1, names.Namespace, names.RouterName("internal")))
		for shard, want := range map[string]framework.ProcessIdentity{
			"edge":     {UID: 0, CapEff: 1 << 10, NoNewPrivs: true},
			"internal": {UID: 65532, CapEff: 0, NoNewPrivs: true},
		} {
			procs, err := framework.ProcessesWithArg("--providers.kubernetesingress.ingressendpoint.hostname=" + shard + ".s1." + zone)
			must(t, err)
			if len(procs) == 0 {
				t.Fatalf("no router process of shard %s on the real nodes", shard)
			}
			for _, p := range procs {
				if p.UID != want.UID || p.CapEff != want.CapEff || p.NoNewPrivs != want.NoNewPrivs {
					t.Fatalf("shard %s router pid %d runs as uid %d capEff %#x noNewPrivs %v, want %+v", shard, p.PID, p.UID, p.CapEff, p.NoNewPrivs, want)
				}
			}
		}
		// The unprivileged router serves on the port its Service targets (the harness runs no
		// kube-proxy, so the client goes to the pod address the Service would forward to).
		must(t, u1.Client.Create(ctx, shardIngress("web-internal", "app.internal.s1."+zone)))
		internal := &corev1.PodList{}
		must(t, u1.Client.List(ctx, internal, client.InNamespace(names.Namespace), client.MatchingLabels{v1alpha1.ShardLabel: "internal"}))
		if len(internal.Items) != 1 || internal.Items[0].Status.PodIP == "" {
			t.Fatalf("internal routers: %+v", internal.Items)
		}
		podAddr := internal.Items[0].Status.PodIP + ":8000"
		eventually(ctx, t, 20*time.Second, func() (bool, string) {
			code, body, err := in.Fabric.Get(ctx, podAddr, "app.internal.s1."+zone)
			return err == nil && code == 200 && strings.Contains(body, "hello from web"), fmt.Sprintf("%s: %d %q %v", podAddr, code, body, err)
		})
		// Traefik publishes the shard's domain apex as the Ingress address.
		eventually(ctx, t, 20*time.Second, func() (bool, string) {
			ing := &networkingv1.Ingress{}
			if err := u1.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web-edge"}, ing); err != nil {
				return false, err.Error()
			}
			lb := ing.Status.LoadBalancer.Ingress
			return len(lb) == 1 && lb[0].Hostname == "edge.s1."+zone, fmt.Sprintf("status.loadBalancer %+v", lb)
		})
	})

	t.Run("a drain respects the disruption budget, DNS drops the node, clients see no failure", func(t *testing.T) {
		edge := "app.edge.s1." + zone
		n1, n2 := in.Nodes[0], in.Nodes[1]
		stop := loopClient(ctx, t, in.DNS, in.Fabric, edge)
		must(t, u1.CordonNode(ctx, n2.Name, true))
		pods := &corev1.PodList{}
		must(t, u1.Client.List(ctx, pods, client.InNamespace(names.Namespace), client.MatchingLabels{v1alpha1.ShardLabel: "edge"}))
		var onN1, onN2 *corev1.Pod
		for i := range pods.Items {
			switch pods.Items[i].Spec.NodeName {
			case n1.Name:
				onN1 = &pods.Items[i]
			case n2.Name:
				onN2 = &pods.Items[i]
			}
		}
		if onN1 == nil || onN2 == nil {
			t.Fatalf("edge routers not on n1 and n2: %+v", pods.Items)
		}
		must(t, framework.Evict(ctx, u1, onN2))
		// The budget allows one router of two down: a second eviction is refused while the
		// replacement cannot run (its only other node is cordoned).
		if err := framework.Evict(ctx, u1, onN1); !apierrors.IsTooManyRequests(err) {
			t.Fatalf("second eviction: %v, want 429 from the PodDisruptionBudget", err)
		}
		answer(t, "edge.s1."+zone, n1.IP)
		answer(t, "internal.s1."+zone, n1.IP)
		time.Sleep(5 * time.Second) // the client keeps going through the change
		n, failed := stop()
		t.Logf("client: %d requests through %s while n2 was drained, %d failed", n, edge, failed)
		if n < 20 || failed > 0 {
			t.Fatalf("%d of %d requests failed during the drain", failed, n)
		}
		must(t, u1.CordonNode(ctx, n2.Name, false))
		answer(t, "edge.s1."+zone, n1.IP, n2.IP)
	})

	// A rolling update of host-network routers without a failed request: TestFlavourConformance.

	t.Run("an edited or deleted router is restored", func(t *testing.T) {
		k := client.ObjectKey{Namespace: names.Namespace, Name: names.RouterName("edge")}
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}}
		update(ctx, t, u1.Client, d, func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](5) })
		eventually(ctx, t, 30*time.Second, func() (bool, string) {
			got := &appsv1.Deployment{}
			if err := u1.Client.Get(ctx, k, got); err != nil {
				return false, err.Error()
			}
			return *got.Spec.Replicas == 2, fmt.Sprintf("replicas %d, want 2 restored", *got.Spec.Replicas)
		})
		must(t, u1.Client.Delete(ctx, d))
		eventually(ctx, t, 30*time.Second, func() (bool, string) {
			got := &appsv1.Deployment{}
			err := u1.Client.Get(ctx, k, got)
			return err == nil && got.DeletionTimestamp == nil, fmt.Sprintf("deployment not recreated: %v", err)
		})
		answer(t, "edge.s1."+zone, nodeIP(0, 1), nodeIP(0, 2))

		// The routers' RBAC is not watched but listed every drift check (TestShards: 5 s): an
		// edited ClusterRole and a deleted ClusterRoleBinding are put back by the next one.
		roleKey := client.ObjectKey{Name: "shardgate-router-traefik"}
		var want int
		update(ctx, t, u1.Client, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: roleKey.Name}},
			func(role *rbacv1.ClusterRole) { want, role.Rules = len(role.Rules), nil })
		binding := &rbacv1.ClusterRoleBinding{}
		bindingKey := client.ObjectKey{Name: "shardgate-router-edge"}
		must(t, u1.Client.Get(ctx, bindingKey, binding))
		must(t, u1.Client.Delete(ctx, binding))
		eventually(ctx, t, 30*time.Second, func() (bool, string) {
			got := &rbacv1.ClusterRole{}
			if err := u1.Client.Get(ctx, roleKey, got); err != nil {
				return false, err.Error()
			}
			again := &rbacv1.ClusterRoleBinding{}
			err := u1.Client.Get(ctx, bindingKey, again)
			return len(got.Rules) == want && err == nil && again.UID != binding.UID,
				fmt.Sprintf("ClusterRole rules %d (want %d); ClusterRoleBinding %s: %v", len(got.Rules), want, bindingKey.Name, err)
		})
	})

	t.Run("a shard whose selector matches no node says why", func(t *testing.T) {
		updateShards(ctx, t, seed, "sharded", append(shards, v1alpha1.ShardSpec{Name: "ghost", NodeSelector: map[string]string{"role": "nowhere"}}))
		waitCondition(ctx, t, seed, key("s1"), v1alpha1.ConditionShardsAvailable, metav1.ConditionFalse, v1alpha1.ReasonNoNodeMatchesSelector)
		// The other shards keep serving.
		answer(t, "edge.s1."+zone, nodeIP(0, 1), nodeIP(0, 2))
	})

	t.Run("a shard removed from the profile is gone with its names", func(t *testing.T) {
		updateShards(ctx, t, seed, "sharded", shards[:2])
		for _, name := range []string{"internal", "ghost"} {
			k := client.ObjectKey{Namespace: names.Namespace, Name: names.RouterName(name)}
			eventually(ctx, t, 30*time.Second, func() (bool, string) {
				err := u1.Client.Get(ctx, k, &appsv1.Deployment{})
				return apierrors.IsNotFound(err), fmt.Sprintf("router %s still there (%v)", name, err)
			})
		}
		eventually(ctx, t, 30*time.Second, func() (bool, string) {
			err := u1.Client.Get(ctx, client.ObjectKey{Namespace: names.Namespace, Name: names.RouterName("internal")}, &corev1.Service{})
			return apierrors.IsNotFound(err), "service router-internal still there"
		})
		// Its names are gone: what is left under s1 is the default shard's wildcard.
		answer(t, "internal.s1."+zone, nodeIP(0, 3), nodeIP(0, 4))
		waitCondition(ctx, t, seed, key("s1"), v1alpha1.ConditionShardsAvailable, metav1.ConditionTrue, v1alpha1.ReasonShardsAvailable)
		answer(t, "s1."+zone, nodeIP(0, 3), nodeIP(0, 4))
	})

	t.Run("routes go to the shard with headroom, and a saturated shard is told", func(t *testing.T) {
		loadSpec(ctx, t, in, "sharded", shards[:2])
	})

	t.Run("strategies the operator writes: a CEL score and an extender", func(t *testing.T) {
		customStrategySpec(ctx, t, in, "sharded", shards[:2])
	})
}

func TestShards(t *testing.T) {
	t.Parallel() // see main_test.go
	ctx, cancel := context.WithTimeout(context.Background(), 16*time.Minute)
	defer cancel()
	env := framework.StartEnvironment(t, framework.EnvironmentOptions{UserClusters: 2, SimulatedNodes: true, DNS: true,
		RealNodes: [][]framework.RealNodeSpec{{
			{Name: "n1", Labels: map[string]string{"role": "edge"}}, {Name: "n2", Labels: map[string]string{"role": "edge"}},
			{Name: "n3", Labels: map[string]string{"role": "general"}}, {Name: "n4", Labels: map[string]string{"role": "general"}},
		}}})
	ctrl := framework.StartController(t, env.Seed, "--dns-zone="+env.DNS.Zone, "--drift-check-interval=5s")
	ShardsSpec(ctx, t, func() ShardsSpecInput {
		return ShardsSpecInput{Seed: env.Seed, Users: env.Users, DNS: env.DNS, Controller: ctrl, Fabric: env.Fabrics[0], Nodes: env.Nodes[0]}
	})
}

// loopClient sends GET / for host, resolving it through BIND before every request (as a client
// whose cache has expired would) and using the first answer, every 100 ms until the returned stop
// is called, which reports how many requests were sent and how many failed. Each failure is
// logged (when, which address, what came back), the first maxLoggedFailures of them.
func loopClient(ctx context.Context, t testing.TB, dnsSrv *framework.DNSServer, f *framework.Fabric, host string,
) func() (int, int) {
	return loopClientEvery(ctx, t, 100*time.Millisecond, dnsSrv, f, host)
}

// loopClientEvery is loopClient with its own pause between requests.
func loopClientEvery(ctx context.Context, t testing.TB, every time.Duration, dnsSrv *framework.DNSServer,
	f *framework.Fabric, host string) func() (int, int) {
	var logged atomic.Int32
	return loop(ctx, every, func(ctx context.Context, i int) (bool, bool) {
		a, err := dnsSrv.Lookup(ctx, host, dns.TypeA)
		if err != nil || len(a.Values) == 0 {
			return false, false
		}
		ip := a.Values[i%len(a.Values)]
		code, body := fabricGet(ctx, f, ip, host)
		if code != 200 && logged.Add(1) <= maxLoggedFailures {
			t.Logf("%s: request %d to %s (of %v) for %s failed: %d %.200q", time.Now().Format("15:04:05.000"), i, ip,
				a.Values, host, code, body)
		}
		return true, code != 200
	})
}

// maxLoggedFailures bounds what a loop client logs of its failed requests.
const maxLoggedFailures = 5

func updateShards(ctx context.Context, t *testing.T, seed *framework.ControlPlane, profile string, shards []v1alpha1.ShardSpec) {
	t.Helper()
	updateProfile(ctx, t, seed, profile, func(p *v1alpha1.IngressProfile) { p.Spec.Shards = shards })
}

// shardIngress is an Ingress for host served by Service web:80. The allocator puts it on the
// shard whose domain the host is under; users never set the shard label themselves.
func shardIngress(name, host string) *networkingv1.Ingress {
	pt := networkingv1.PathTypePrefix
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: networkingv1.IngressSpec{
			IngressClassName: ptr.To(names.IngressClassName),
			Rules: []networkingv1.IngressRule{{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &pt, Backend: networkingv1.IngressBackend{
					Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}},
			}}}},
		},
	}
}
