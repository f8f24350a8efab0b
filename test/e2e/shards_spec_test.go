package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	appsv1 "k8s.io/api/apps/v1"
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

// ShardsSpecInput is what ShardsSpec runs on: a seed with external-dns and BIND, two user
// clusters with simulated nodes, and the seed controller.
type ShardsSpecInput struct {
	Seed       *framework.ControlPlane
	Users      []*framework.ControlPlane
	DNS        *framework.DNSServer
	Controller *framework.Controller
}

// ShardsSpec proves that shards described once in a profile are deployed into every selected
// cluster, kept as described, and published in DNS by their own rules.
func ShardsSpec(ctx context.Context, t *testing.T, inputGetter func() ShardsSpecInput) {
	in := inputGetter()
	seed, zone := in.Seed, in.DNS.Zone
	sel := map[string]string{"ingress": "sharded"}
	shards := []v1alpha1.ShardSpec{
		{Name: v1alpha1.DefaultShardName, Replicas: ptr.To[int32](2), NodeSelector: map[string]string{"role": "general"}},
		{Name: "edge", Replicas: ptr.To[int32](2), NodeSelector: map[string]string{"role": "edge"}},
		{Name: "internal", Publishing: v1alpha1.PublishNodePort, NodeSelector: map[string]string{"role": "edge"}},
	}
	createProfile(ctx, t, seed, "sharded", sel, v1alpha1.DNSSettings{}, shards...)
	for i, u := range in.Users {
		ip := func(j int) string { return fmt.Sprintf("127.0.%d.%d", 30+i, j) }
		addNodes(ctx, t, u,
			framework.NodeSpec{Name: "n1", InternalIP: ip(1), Labels: map[string]string{"role": "edge"}},
			framework.NodeSpec{Name: "n2", InternalIP: ip(2), Labels: map[string]string{"role": "edge"}},
			framework.NodeSpec{Name: "n3", InternalIP: ip(3), Labels: map[string]string{"role": "general"}},
			framework.NodeSpec{Name: "n4", InternalIP: ip(4), Labels: map[string]string{"role": "general"}})
		registerCAPICluster(ctx, t, seed, "default", fmt.Sprintf("s%d", i+1), u, sel, nil)
	}
	u1 := in.Users[0]
	answer := func(t *testing.T, name string, ips ...string) {
		t.Helper()
		waitAnswer(ctx, t, in.DNS, "anything."+name, framework.AnswerIs(ips...))
		waitAnswer(ctx, t, in.DNS, name, framework.AnswerIs(ips...))
	}

	t.Run("every shard runs and each publishes exactly its nodes", func(t *testing.T) {
		for i := range in.Users {
			id := fmt.Sprintf("s%d", i+1)
			ip := func(j int) string { return fmt.Sprintf("127.0.%d.%d", 30+i, j) }
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

	t.Run("real traffic reaches a backend through BIND and the shard's own Traefik", func(t *testing.T) {
		backend := framework.StartBackend(t, "127.0.2.1", "web")
		must(t, framework.ExposeBackend(ctx, u1, "default", "web", backend))
		must(t, u1.Client.Create(ctx, shardIngress("web-edge", "app.edge.s1."+zone)))
		must(t, u1.Client.Create(ctx, shardIngress("web-default", "app.s1."+zone)))
		for _, shard := range []string{"edge", v1alpha1.DefaultShardName} {
			d := &appsv1.Deployment{}
			must(t, u1.Client.Get(ctx, client.ObjectKey{Namespace: names.Namespace, Name: names.RouterName(shard)}, d))
			pods := &corev1.PodList{}
			must(t, u1.Client.List(ctx, pods, client.InNamespace(names.Namespace), client.MatchingLabels{v1alpha1.ShardLabel: shard}))
			for _, p := range pods.Items {
				framework.StartTraefik(t, u1, d, "127.0.30."+strings.TrimPrefix(p.Spec.NodeName, "n"))
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

	t.Run("draining a node removes it from its shard's answer; the router coming back returns it", func(t *testing.T) {
		must(t, u1.CordonNode(ctx, "n2", true))
		pods := &corev1.PodList{}
		must(t, u1.Client.List(ctx, pods, client.InNamespace(names.Namespace), client.MatchingLabels{v1alpha1.ShardLabel: "edge"}))
		for _, p := range pods.Items {
			if p.Spec.NodeName == "n2" {
				must(t, u1.Client.Delete(ctx, &p))
			}
		}
		answer(t, "edge.s1."+zone, "127.0.30.1")
		answer(t, "internal.s1."+zone, "127.0.30.1")
		must(t, u1.CordonNode(ctx, "n2", false))
		answer(t, "edge.s1."+zone, "127.0.30.1", "127.0.30.2")
	})

	t.Run("an edited or deleted router is restored", func(t *testing.T) {
		d := &appsv1.Deployment{}
		k := client.ObjectKey{Namespace: names.Namespace, Name: names.RouterName("edge")}
		must(t, u1.Client.Get(ctx, k, d))
		d.Spec.Replicas = ptr.To[int32](5)
		must(t, u1.Client.Update(ctx, d))
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
		answer(t, "edge.s1."+zone, "127.0.30.1", "127.0.30.2")
	})

	t.Run("a shard whose selector matches no node says why", func(t *testing.T) {
		updateShards(ctx, t, seed, "sharded", append(shards, v1alpha1.ShardSpec{Name: "ghost", NodeSelector: map[string]string{"role": "nowhere"}}))
		waitCondition(ctx, t, seed, key("s1"), v1alpha1.ConditionShardsAvailable, metav1.ConditionFalse, v1alpha1.ReasonNoNodeMatchesSelector)
		// The other shards keep serving.
		answer(t, "edge.s1."+zone, "127.0.30.1", "127.0.30.2")
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
		answer(t, "internal.s1."+zone, "127.0.30.3", "127.0.30.4")
		waitCondition(ctx, t, seed, key("s1"), v1alpha1.ConditionShardsAvailable, metav1.ConditionTrue, v1alpha1.ReasonShardsAvailable)
		answer(t, "s1."+zone, "127.0.30.3", "127.0.30.4")
	})
}

func TestShards(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	env := framework.StartEnvironment(t, framework.EnvironmentOptions{UserClusters: 2, SimulatedNodes: true, DNS: true})
	ctrl := framework.StartController(t, env.Seed, "--dns-zone="+env.DNS.Zone)
	ShardsSpec(ctx, t, func() ShardsSpecInput {
		return ShardsSpecInput{Seed: env.Seed, Users: env.Users, DNS: env.DNS, Controller: ctrl}
	})
}

func updateShards(ctx context.Context, t *testing.T, seed *framework.ControlPlane, profile string, shards []v1alpha1.ShardSpec) {
	t.Helper()
	p := &v1alpha1.IngressProfile{}
	must(t, seed.Client.Get(ctx, client.ObjectKey{Name: profile}, p))
	p.Spec.Shards = shards
	must(t, seed.Client.Update(ctx, p))
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

// get sends GET / for host to ip:80 and returns the status and body (0 on a transport error).
func get(ip, host string) (int, string) {
	c := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{Proxy: nil}}
	req, err := http.NewRequest(http.MethodGet, "http://"+ip+"/", nil)
	if err != nil {
		return 0, err.Error()
	}
	req.Host = host
	resp, err := c.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
