package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1 "k8s.io/api/core/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/test/framework"
)

// TestCanary: every shard's canary route is requested from the seed as a user would — its name
// at BIND, then the address through the shard's real Traefik router on a real node, reached
// through the seed's egress proxy. RoutesServing turns False within the interval when the router
// is stopped (SIGSTOP: it still runs and its pod still looks Ready, as a wedged router does) and
// True again, keeping the last failure, when it resumes. The canary route is Shardgate's own: it
// is not allocated, not counted, and no tenant can take its host.
func TestCanary(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	env := framework.StartEnvironment(t, framework.EnvironmentOptions{UserClusters: 1, DNS: true,
		RealNodes: [][]framework.RealNodeSpec{{{Name: "n1"}}}})
	seed, u, zone := env.Seed, env.Users[0], env.DNS.Zone
	const interval = 3 * time.Second
	ctl := framework.StartController(t, seed, "--dns-zone="+zone, "--dns-verify-servers="+env.DNS.Addr,
		"--canary-interval="+interval.String(), "--canary-proxy="+env.Fabrics[0].StartProxy(t),
		"--canary-allow-cidrs=10.123.0.0/16") // the fabric's nodes (framework/fabric.go)
	sel := map[string]string{"canary": "yes"}
	createProfile(ctx, t, seed, "canary", sel, v1alpha1.DNSSettings{TTL: 5},
		v1alpha1.ShardSpec{Name: v1alpha1.DefaultShardName, Image: framework.TraefikImage, ImagePullPolicy: corev1.PullNever, Replicas: ptr.To[int32](1)})
	kc, err := u.RestrictedKubeconfig(ctx, "shardgate-canary", "config/user-cluster/rbac.yaml")
	must(t, err)
	putKubeconfigSecret(ctx, t, seed, "default", "k1", "k1", kc, sel)
	k := key("k1")
	host := names.CanaryHost("k1." + zone)
	serving := func() *metav1.Condition {
		ci := &v1alpha1.ClusterIngress{}
		if err := seed.Client.Get(ctx, k, ci); err != nil {
			return nil // not created yet
		}
		for _, c := range ci.Status.Canaries {
			if c.Shard == v1alpha1.DefaultShardName && c.Host == host {
				return meta.FindStatusCondition(c.Conditions, v1alpha1.ConditionRoutesServing)
			}
		}
		return nil
	}
	waitServing := func(t *testing.T, status metav1.ConditionStatus, reason string, within time.Duration) *metav1.Condition {
		t.Helper()
		var c *metav1.Condition
		eventually(ctx, t, within, func() (bool, string) {
			c = serving()
			return c != nil && c.Status == status && c.Reason == reason, fmt.Sprintf("RoutesServing %+v", c)
		})
		return c
	}

	failing := alertCheck{alert: "ShardgateCanaryFailing", cluster: "default/k1"}
	t.Run("the canary answers through the shard's router", func(t *testing.T) {
		c := waitServing(t, metav1.ConditionTrue, v1alpha1.ReasonServing, 3*time.Minute)
		t.Logf("RoutesServing: %s", c.Message)
		if !strings.Contains(c.Message, host) || !strings.Contains(c.Message, env.Nodes[0][0].IP) {
			t.Errorf("message does not say what answered: %s", c.Message)
		}
		ci := getCI(ctx, t, seed, k)
		if cc := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionRoutesServing); cc == nil || cc.Status != metav1.ConditionTrue {
			t.Errorf("cluster RoutesServing %+v", cc)
		}
		// Shardgate's own route: no allocation marks, not counted as a route.
		ing := &networkingv1.Ingress{}
		must(t, u.Client.Get(ctx, client.ObjectKey{Namespace: names.Namespace, Name: names.CanaryName(v1alpha1.DefaultShardName)}, ing))
		if _, ok := ing.Annotations[v1alpha1.AllocationAnnotation]; ok || ci.Status.Routes != 0 {
			t.Errorf("the canary route was allocated: %v, routes %d", ing.Annotations, ci.Status.Routes)
		}
		m, err := ctl.Metrics()
		must(t, err)
		if !strings.Contains(m, `shardgate_shard_routes_serving{cluster="default/k1",shard="default"} 1`) {
			t.Errorf("metrics lack the serving gauge")
		}
		checkDashboardMetrics(t, m, "shardgate_canary_", "shardgate_shard_routes_serving")
		failing.scrapes = append(failing.scrapes, m)
	})

	t.Run("a tenant cannot take the canary's host", func(t *testing.T) {
		must(t, u.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "evil"}}))
		must(t, u.Client.Create(ctx, routeIngress("evil", "squat", host)))
		eventually(ctx, t, 30*time.Second, func() (bool, string) {
			ing := &networkingv1.Ingress{}
			must(t, u.Client.Get(ctx, client.ObjectKey{Namespace: "evil", Name: "squat"}, ing))
			a := ing.Annotations[v1alpha1.AllocationAnnotation]
			return strings.Contains(a, "reserved for Shardgate's canary"), a
		})
	})

	t.Run("a stopped router turns RoutesServing False within the interval, and back", func(t *testing.T) {
		procs, err := framework.ProcessesWithArg("--providers.kubernetesingress.ingressendpoint.hostname=k1." + zone)
		must(t, err)
		if len(procs) == 0 {
			t.Fatal("no Traefik process of the shard")
		}
		start := time.Now()
		resume := freeze(t, procs)
		// One interval, the request's timeout (5 s) and a status write. Under load the kubelet's
		// readiness probe may see the wedged router first: then the shard has no ready router,
		// which is False too.
		var c *metav1.Condition
		eventually(ctx, t, interval+15*time.Second, func() (bool, string) {
			c = serving()
			return c != nil && c.Status == metav1.ConditionFalse && (c.Reason == v1alpha1.ReasonNotAnswering || c.Reason == v1alpha1.ReasonNoRouterReady),
				fmt.Sprintf("RoutesServing %+v", c)
		})
		t.Logf("router stopped → RoutesServing False in %s: %s", time.Since(start).Round(100*time.Millisecond), c.Message)
		m, err := ctl.Metrics()
		must(t, err)
		// A request that failed is sampled 0; a shard without a ready router was not requested and
		// has no sample (ShardsAvailable, and its alert, say that).
		requestFailed := strings.Contains(m, `shardgate_shard_routes_serving{cluster="default/k1",shard="default"} 0`)
		if !requestFailed && (strings.Contains(m, `shardgate_shard_routes_serving{cluster="default/k1"`) ||
			c.Reason != v1alpha1.ReasonNoRouterReady) {
			t.Errorf("the serving gauge is not 0 (RoutesServing %s)", c.Reason)
		}
		failing.scrapes = append(failing.scrapes, m)
		// The doctor names the wedged router: through the canary's failed request, or through the
		// shard without a ready router once the kubelet's probe saw it too.
		if d := doctor(ctx, t, seed, "default/k1", "--dns-server", env.DNS.Addr); !strings.Contains(causesOf(d),
			"shard default: RoutesServing=False/NotAnswering → ShardgateCanaryFailing") &&
			!strings.Contains(causesOf(d), "ShardsAvailable=False/NoRouterReady → ShardgateShardsUnavailable") {
			t.Errorf("doctor default/k1: %s", causesOf(d))
		} else {
			t.Logf("doctor default/k1: %s", causesOf(d))
		}
		stoppedReason := c.Reason
		if sc := serving(); sc != nil {
			stoppedReason = sc.Reason
		}
		resume()
		start = time.Now()
		c = waitServing(t, metav1.ConditionTrue, v1alpha1.ReasonServing, time.Minute)
		t.Logf("router resumed → RoutesServing True in %s: %s", time.Since(start).Round(100*time.Millisecond), c.Message)
		// The chart's alert reads the same metrics: failing while the router was stopped only.
		failing.scrape(t, ctl)
		if len(failing.scrapes) == 3 {
			var whileStopped []sample
			if requestFailed {
				whileStopped = []sample{{Labels: `{cluster="default/k1",shard="default"}`, Value: 0}}
			}
			failing.expect(t, nil, whileStopped, nil)
		}
		// A failed request is kept as the last failure; a shard that merely had no ready router
		// (the readiness probe was quicker) has none to keep.
		if stoppedReason == v1alpha1.ReasonNotAnswering && !strings.Contains(c.Message, "last failure") {
			t.Errorf("the last failure is not kept: %s", c.Message)
		}
	})

	t.Run("a profile that turns the canary off removes it", func(t *testing.T) {
		updateProfile(ctx, t, seed, "canary", func(p *v1alpha1.IngressProfile) { p.Spec.Canary.Disabled = true })
		eventually(ctx, t, time.Minute, func() (bool, string) {
			ci := getCI(ctx, t, seed, k)
			err := u.Client.Get(ctx, client.ObjectKey{Namespace: names.Namespace, Name: names.CanaryName(v1alpha1.DefaultShardName)}, &networkingv1.Ingress{})
			gone := client.IgnoreNotFound(err) == nil && err != nil
			return len(ci.Status.Canaries) == 0 && meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionRoutesServing) == nil && gone,
				fmt.Sprintf("canaries %v, canary Ingress gone %v", ci.Status.Canaries, gone)
		})
	})
}
