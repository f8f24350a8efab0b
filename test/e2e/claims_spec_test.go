package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/test/framework"
)

// TestIngressClaim proves IngressClaims end to end on two real nodes with real Traefik, BIND and
// external-dns, the cluster registered with exactly config/user-cluster/rbac.yaml: a claim binds
// two Ingresses to a dedicated router of their own (its names in DNS, 200 through them, 404 from
// the shared shard, no other namespace's Ingress on it); limits and turning claims off refuse new
// claims only; Retain, Recycle and Delete do what they say when the Ingresses go; deleting a
// claim returns its Ingresses to the shared shards.
func TestIngressClaim(t *testing.T) {
	t.Parallel() // see main_test.go
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	env := framework.StartEnvironment(t, framework.EnvironmentOptions{UserClusters: 1, DNS: true,
		RealNodes: [][]framework.RealNodeSpec{{{Name: "n1"}, {Name: "n2"}}}})
	seed, u, zone, fab := env.Seed, env.Users[0], env.DNS.Zone, env.Fabrics[0]
	// A short reclaim grace: the Retain and Delete subtests wait for it to pass.
	framework.StartController(t, seed, "--dns-zone="+zone, "--claim-reclaim-grace=5s")
	sel := map[string]string{"claims": "yes"}
	// Claimed routers on the host network (DNS answers the nodes they run on, HTTP goes to port 80
	// there); the shared shard behind a NodePort Service, reached through its pods (the harness
	// has no kube-proxy), so that both kinds of router can share the two nodes.
	profile := &v1alpha1.IngressProfile{ObjectMeta: metav1.ObjectMeta{Name: "claims"}, Spec: v1alpha1.IngressProfileSpec{
		ClusterSelector: metav1.LabelSelector{MatchLabels: sel}, DNS: v1alpha1.DNSSettings{TTL: 5},
		Shards: []v1alpha1.ShardSpec{realRouter(v1alpha1.ShardSpec{Name: v1alpha1.DefaultShardName, Publishing: v1alpha1.PublishNodePort})},
		Claims: v1alpha1.ClaimSettings{Allowed: true, Publishing: v1alpha1.PublishHostNetwork, Image: framework.TraefikImage, ImagePullPolicy: corev1.PullNever,
			MaxReplicas: 1, MaxPerNamespace: 1, MaxResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}},
	}}
	must(t, seed.Client.Create(ctx, profile))
	for _, ns := range []string{"team-a", "team-b", "team-c"} {
		must(t, u.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
		must(t, framework.DeployBackend(ctx, u, ns, "web", 1))
	}
	must(t, u.Client.Create(ctx, nsIngress("team-a", "web1", "")))
	must(t, u.Client.Create(ctx, nsIngress("team-a", "web2", "shop.example.test")))
	kc, err := u.RestrictedKubeconfig(ctx, "shardgate-claims", "config/user-cluster/rbac.yaml")
	must(t, err)
	putKubeconfigSecret(ctx, t, seed, "default", "k1", "k1", kc, sel)
	k := key("k1")
	domain := "k1." + zone
	claimDomain := "mine-team-a." + domain
	c := &claimsEnv{ctx: ctx, t: t, u: u}

	// Both Ingresses start on the shared shard.
	c.waitShard("team-a", "web1", v1alpha1.DefaultShardName)
	mine := &v1alpha1.IngressClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "mine"}, Spec: v1alpha1.IngressClaimSpec{
		Ingresses: []corev1.LocalObjectReference{{Name: "web1"}, {Name: "web2"}}, Replicas: 1, ReclaimPolicy: v1alpha1.ReclaimRetain}}
	must(t, u.Client.Create(ctx, mine))

	if !t.Run("a claim binds its Ingresses to a dedicated router of their own", func(t *testing.T) {
		start := time.Now()
		c.t = t
		c.waitPhase("team-a", "mine", v1alpha1.ClaimBound)
		t.Logf("claim created → Bound in %s", time.Since(start).Round(100*time.Millisecond))
		c.waitShard("team-a", "web1", "mine-team-a")
		c.waitShard("team-a", "web2", "mine-team-a")
		var ing *networkingv1.Ingress
		var host string
		eventually(ctx, t, 30*time.Second, func() (bool, string) {
			ing = c.ingress("team-a", "web1")
			host = ing.Spec.Rules[0].Host
			return strings.HasSuffix(host, "."+claimDomain), fmt.Sprintf("web1's default host %s is not under the claim's domain %s", host, claimDomain)
		})
		if got := ing.Annotations[v1alpha1.CNAMETargetAnnotation]; got != "" {
			t.Errorf("web1 has a CNAME target %q", got)
		}
		if got := c.ingress("team-a", "web2").Annotations[v1alpha1.CNAMETargetAnnotation]; got != claimDomain {
			t.Errorf("web2's CNAME target %q, want %s", got, claimDomain)
		}
		// BIND answers the claimed shard's names with the node its router runs on, which serves
		// both Ingresses.
		waitAnswer(ctx, t, env.DNS, host, func(a framework.Answer) bool { return a.Rcode == dns.RcodeSuccess && len(a.Values) == 1 })
		a, err := env.DNS.Lookup(ctx, host, dns.TypeA)
		must(t, err)
		ip := a.Values[0]
		for _, h := range []string{host, "shop.example.test"} {
			eventually(ctx, t, 30*time.Second, func() (bool, string) {
				code, body := fabricGet(ctx, fab, ip, h)
				return code == 200 && strings.Contains(body, "hello from web"), fmt.Sprintf("%s (%s): %d %q", ip, h, code, body)
			})
		}
		// The shared shard's routers answer 404 for them.
		for _, podIP := range c.routerPodIPs(v1alpha1.DefaultShardName) {
			eventually(ctx, t, 30*time.Second, func() (bool, string) {
				code, _, err := fab.Get(ctx, podIP+":8000", host)
				return err == nil && code == 404, fmt.Sprintf("the shared router %s answers %d %v for %s, want 404", podIP, code, err, host)
			})
		}
		// Another namespace cannot put an Ingress on it.
		must(t, u.Client.Create(ctx, nsIngress("team-b", "intruder", "x."+claimDomain)))
		eventually(ctx, t, 30*time.Second, func() (bool, string) {
			got := c.ingress("team-b", "intruder").Annotations[v1alpha1.AllocationAnnotation]
			return strings.HasPrefix(got, "Rejected") && strings.Contains(got, "IngressClaim team-a/mine"), "intruder: " + got
		})
		// The seed shows the claim and its shard.
		ci := getCI(ctx, t, seed, k)
		if len(ci.Status.Claims) != 1 || ci.Status.Claims[0].Shard != "mine-team-a" || strings.Join(ci.Status.Claims[0].Ingresses, ",") != "web1,web2" {
			t.Errorf("status.claims %+v", ci.Status.Claims)
		}
		if !slicesContainShard(ci.Status.Shards, "mine-team-a") {
			t.Errorf("status.shards lacks the claimed shard: %+v", ci.Status.Shards)
		}
	}) {
		return
	}

	t.Run("over the limits, or with claims turned off, a claim is refused and provisions nothing", func(t *testing.T) {
		c.t = t
		big := &v1alpha1.IngressClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "big"}, Spec: v1alpha1.IngressClaimSpec{
			Ingresses: []corev1.LocalObjectReference{{Name: "web"}}, Replicas: 3,
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}
		must(t, u.Client.Create(ctx, big))
		cond := c.waitPhase("team-b", "big", v1alpha1.ClaimFailed)
		t.Logf("big: %s: %s", cond.Reason, cond.Message)
		if cond.Reason != v1alpha1.ReasonClaimOverLimits || !strings.Contains(cond.Message, "replicas 3 > maxReplicas 1") || !strings.Contains(cond.Message, "cpu 1 exceeds maxResources (200m)") {
			t.Errorf("big: %s %s", cond.Reason, cond.Message)
		}
		// Claims turned off: the admitted claim keeps serving, a new one is refused.
		setAllowed := func(allowed bool) {
			upsert(ctx, t, seed.Client, profile, func() { profile.Spec.Claims.Allowed = allowed })
			// The profile reaches the cluster's settings first (claims made before then are judged
			// by the old ones).
			eventually(ctx, t, 30*time.Second, func() (bool, string) {
				return getCI(ctx, t, seed, k).Spec.Claims.Allowed == allowed, "claims.allowed not in the cluster's settings yet"
			})
		}
		setAllowed(false)
		defer setAllowed(true)
		late := &v1alpha1.IngressClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team-c", Name: "late"}, Spec: v1alpha1.IngressClaimSpec{
			Ingresses: []corev1.LocalObjectReference{{Name: "web"}}, Replicas: 1}}
		must(t, u.Client.Create(ctx, late))
		if cond := c.waitPhase("team-c", "late", v1alpha1.ClaimFailed); cond.Reason != v1alpha1.ReasonClaimsNotAllowed {
			t.Errorf("late: %s %s", cond.Reason, cond.Message)
		}
		c.waitPhase("team-a", "mine", v1alpha1.ClaimBound)
		for _, name := range []string{"big-team-b", "late-team-c"} {
			if err := u.Client.Get(ctx, client.ObjectKey{Namespace: names.Namespace, Name: names.RouterName(name)}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
				t.Errorf("router %s of a refused claim: %v", name, err)
			}
		}
		must(t, u.Client.Delete(ctx, big))
		must(t, u.Client.Delete(ctx, late))
	})

	t.Run("Retain: the Ingresses gone, the claim is Released, keeps its router and binds nothing until edited", func(t *testing.T) {
		c.t = t
		c.deleteIngress("team-a", "web1")
		c.deleteIngress("team-a", "web2")
		c.waitPhase("team-a", "mine", v1alpha1.ClaimReleased)
		c.routerExists("mine-team-a", true)
		must(t, u.Client.Create(ctx, nsIngress("team-a", "web1", "")))
		c.waitShard("team-a", "web1", v1alpha1.DefaultShardName)
		// Edited (here: to Recycle), it binds again.
		c.editClaim("team-a", "mine", func(m *v1alpha1.IngressClaim) { m.Spec.ReclaimPolicy = v1alpha1.ReclaimRecycle })
		c.waitPhase("team-a", "mine", v1alpha1.ClaimBound)
		c.waitShard("team-a", "web1", "mine-team-a")
	})

	t.Run("Recycle: the Ingresses gone, the claim stays Bound and takes the next one it names", func(t *testing.T) {
		c.t = t
		c.deleteIngress("team-a", "web1")
		eventually(ctx, t, time.Minute, func() (bool, string) {
			m := c.claim("team-a", "mine")
			return m.Status.BoundCount == 0 && m.Status.Phase == v1alpha1.ClaimBound, fmt.Sprintf("claim %s bound %v", m.Status.Phase, m.Status.BoundIngresses)
		})
		c.routerExists("mine-team-a", true)
		must(t, u.Client.Create(ctx, nsIngress("team-a", "web2", "")))
		c.waitShard("team-a", "web2", "mine-team-a")
	})

	t.Run("deleting a claim returns its Ingresses to the shared shards", func(t *testing.T) {
		c.t = t
		// Its names answer its router's node until then.
		waitAnswer(ctx, t, env.DNS, "x."+claimDomain, func(a framework.Answer) bool { return a.Rcode == dns.RcodeSuccess && len(a.Values) == 1 })
		must(t, u.Client.Delete(ctx, c.claim("team-a", "mine")))
		c.waitShard("team-a", "web2", v1alpha1.DefaultShardName)
		c.routerExists("mine-team-a", false)
		// Its names are gone: the cluster's wildcard answers them again (the shared shard's nodes).
		waitAnswer(ctx, t, env.DNS, "x."+claimDomain, framework.AnswerIs(c.answer(env.DNS, domain)...))
	})

	t.Run("Delete: the Ingresses gone, the router, the names and the claim go", func(t *testing.T) {
		c.t = t
		again := &v1alpha1.IngressClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "again"}, Spec: v1alpha1.IngressClaimSpec{
			Ingresses: []corev1.LocalObjectReference{{Name: "web2"}}, Replicas: 1, ReclaimPolicy: v1alpha1.ReclaimDelete}}
		must(t, u.Client.Create(ctx, again))
		c.waitPhase("team-a", "again", v1alpha1.ClaimBound)
		c.waitShard("team-a", "web2", "again-team-a")
		waitAnswer(ctx, t, env.DNS, "x.again-team-a."+domain, func(a framework.Answer) bool { return a.Rcode == dns.RcodeSuccess && len(a.Values) == 1 })
		c.deleteIngress("team-a", "web2")
		eventually(ctx, t, time.Minute, func() (bool, string) {
			err := u.Client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "again"}, &v1alpha1.IngressClaim{})
			return apierrors.IsNotFound(err), fmt.Sprintf("claim: %v", err)
		})
		c.routerExists("again-team-a", false)
		waitAnswer(ctx, t, env.DNS, "x.again-team-a."+domain, framework.AnswerIs(c.answer(env.DNS, domain)...))
		if ci := getCI(ctx, t, seed, k); len(ci.Status.Claims) != 0 {
			t.Errorf("status.claims %+v", ci.Status.Claims)
		}
	})

	t.Run("a claim of another flavour, once the profile allows it, gets HAProxy routers for the Ingresses of its class",
		func(t *testing.T) {
			c.t = t
			haproxy, _ := render.FlavourFor(v1alpha1.FlavourHAProxy)
			class := haproxy.IngressClass().Name
			ing := nsIngress("team-b", "hp", "")
			ing.Spec.IngressClassName = ptr.To(class)
			must(t, u.Client.Create(ctx, ing))
			must(t, u.Client.Create(ctx, &v1alpha1.IngressClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "hp"},
				Spec: v1alpha1.IngressClaimSpec{Ingresses: []corev1.LocalObjectReference{{Name: "hp"}}, Replicas: 1,
					Flavour: v1alpha1.FlavourHAProxy}}))
			if cond := c.waitPhase("team-b", "hp", v1alpha1.ClaimFailed); cond.Reason != v1alpha1.ReasonClaimFlavourNotAllowed {
				t.Errorf("hp before the profile allows haproxy claims: %s %s", cond.Reason, cond.Message)
			}
			upsert(ctx, t, seed.Client, profile, func() {
				profile.Spec.Claims.Flavours = []v1alpha1.ClaimFlavour{{Name: v1alpha1.FlavourHAProxy, Image: framework.HAProxyImage}}
			})
			c.waitPhase("team-b", "hp", v1alpha1.ClaimBound)
			if st := c.claim("team-b", "hp").Status; st.Flavour != v1alpha1.FlavourHAProxy || st.IngressClassName != class {
				t.Errorf("the claim tells flavour %q class %q, want haproxy %s", st.Flavour, st.IngressClassName, class)
			}
			c.waitShard("team-b", "hp", "hp-team-b")
			d := &appsv1.Deployment{}
			must(t, u.Client.Get(ctx, client.ObjectKey{Namespace: names.Namespace, Name: names.RouterName("hp-team-b")}, d))
			if img := d.Spec.Template.Spec.Containers[0].Image; img != framework.HAProxyImage {
				t.Errorf("the claimed routers run %s, want %s", img, framework.HAProxyImage)
			}
			var host string
			eventually(ctx, t, 30*time.Second, func() (bool, string) {
				host = c.ingress("team-b", "hp").Spec.Rules[0].Host
				return strings.HasSuffix(host, ".hp-team-b."+domain), "hp's default host " + host
			})
			waitAnswer(ctx, t, env.DNS, host, func(a framework.Answer) bool { return a.Rcode == dns.RcodeSuccess && len(a.Values) == 1 })
			a, err := env.DNS.Lookup(ctx, host, dns.TypeA)
			must(t, err)
			eventually(ctx, t, time.Minute, func() (bool, string) {
				code, body := fabricGet(ctx, fab, a.Values[0], host)
				return code == 200 && strings.Contains(body, "hello from web"), fmt.Sprintf("%s (%s): %d %q", a.Values[0], host, code, body)
			})
		})
}

// claimsEnv holds what TestIngressClaim's helpers share; t is the running subtest.
type claimsEnv struct {
	ctx context.Context
	t   *testing.T
	u   *framework.ControlPlane
}

func (c *claimsEnv) ingress(ns, name string) *networkingv1.Ingress {
	c.t.Helper()
	ing := &networkingv1.Ingress{}
	must(c.t, c.u.Client.Get(c.ctx, client.ObjectKey{Namespace: ns, Name: name}, ing))
	return ing
}

func (c *claimsEnv) claim(ns, name string) *v1alpha1.IngressClaim {
	c.t.Helper()
	m := &v1alpha1.IngressClaim{}
	must(c.t, c.u.Client.Get(c.ctx, client.ObjectKey{Namespace: ns, Name: name}, m))
	return m
}

// waitShard waits until ns/name is allocated to shard.
func (c *claimsEnv) waitShard(ns, name, shard string) {
	c.t.Helper()
	eventually(c.ctx, c.t, 2*time.Minute, func() (bool, string) {
		ing := c.ingress(ns, name)
		// What the namespace's claims say of their bindings, should the route not follow them.
		claims := &v1alpha1.IngressClaimList{}
		var bound []string
		if err := c.u.Client.List(c.ctx, claims, client.InNamespace(ns)); err != nil {
			bound = append(bound, err.Error()) // the CRD may not be installed yet
		}
		for _, m := range claims.Items {
			bound = append(bound, fmt.Sprintf("%s: %s %v (%s)", m.Name, m.Status.Phase, m.Status.BoundIngresses, m.ResourceVersion))
		}
		return ing.Labels[v1alpha1.ShardLabel] == shard && ing.Annotations[v1alpha1.AllocationAnnotation] == v1alpha1.AllocationAllocated,
			fmt.Sprintf("%s/%s on %q (%s, resourceVersion %s), want %s; claims %v", ns, name, ing.Labels[v1alpha1.ShardLabel],
				ing.Annotations[v1alpha1.AllocationAnnotation], ing.ResourceVersion, shard, bound)
	})
}

// waitPhase waits for the claim's phase and returns its Bound condition.
func (c *claimsEnv) waitPhase(ns, name string, phase v1alpha1.ClaimPhase) metav1.Condition {
	c.t.Helper()
	var cond metav1.Condition
	eventually(c.ctx, c.t, 3*time.Minute, func() (bool, string) {
		m := c.claim(ns, name)
		if b := meta.FindStatusCondition(m.Status.Conditions, "Bound"); b != nil {
			cond = *b
		}
		return m.Status.Phase == phase, fmt.Sprintf("claim %s/%s: %s (%s: %s), want %s", ns, name, m.Status.Phase, cond.Reason, cond.Message, phase)
	})
	return cond
}

func (c *claimsEnv) editClaim(ns, name string, edit func(*v1alpha1.IngressClaim)) {
	c.t.Helper()
	m := c.claim(ns, name)
	edit(m)
	must(c.t, c.u.Client.Update(c.ctx, m))
}

func (c *claimsEnv) deleteIngress(ns, name string) {
	c.t.Helper()
	must(c.t, c.u.Client.Delete(c.ctx, &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}))
}

// routerExists waits until shard's router Deployment exists (or is gone).
func (c *claimsEnv) routerExists(shard string, want bool) {
	c.t.Helper()
	eventually(c.ctx, c.t, time.Minute, func() (bool, string) {
		err := c.u.Client.Get(c.ctx, client.ObjectKey{Namespace: names.Namespace, Name: names.RouterName(shard)}, &appsv1.Deployment{})
		return (err == nil) == want, fmt.Sprintf("router of %s: %v", shard, err)
	})
}

// answer is BIND's A answer for name.
func (c *claimsEnv) answer(s *framework.DNSServer, name string) []string {
	c.t.Helper()
	a, err := s.Lookup(c.ctx, name, dns.TypeA)
	must(c.t, err)
	if len(a.Values) == 0 {
		c.t.Fatalf("no answer for %s", name)
	}
	return a.Values
}

// routerPodIPs are the pod IPs of shard's running routers.
func (c *claimsEnv) routerPodIPs(shard string) []string {
	c.t.Helper()
	pods := &corev1.PodList{}
	must(c.t, c.u.Client.List(c.ctx, pods, client.InNamespace(names.Namespace), client.MatchingLabels(names.RouterSelector(shard))))
	var ips []string
	for _, p := range pods.Items {
		if p.Status.PodIP != "" && p.DeletionTimestamp == nil {
			ips = append(ips, p.Status.PodIP)
		}
	}
	if len(ips) == 0 {
		c.t.Fatalf("no running router of shard %s", shard)
	}
	return ips
}

func slicesContainShard(shards []v1alpha1.ShardStatus, name string) bool {
	for _, s := range shards {
		if s.Name == name {
			return true
		}
	}
	return false
}

// nsIngress is an Ingress in ns for the Service web (host "" for a default host).
func nsIngress(ns, name, host string) *networkingv1.Ingress {
	ing := shardIngress(name, host)
	ing.Namespace = ns
	ing.Spec.IngressClassName = ptr.To(names.IngressClassName)
	return ing
}
