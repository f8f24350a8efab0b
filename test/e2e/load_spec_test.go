package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/routerload"
	"github.com/shardgate/shardgate/test/framework"
)

// loadSpec proves allocation by real router load (ShardsSpec's cluster s1: shard default on n3
// and n4, shard edge on n1 and n2, real Traefik routers): with LeastUtilized, each router's load
// reporter renews its Lease; a bounded client, resolving through BIND before every request, drives
// the default shard past its capacity; it becomes Saturated and the cluster says ShardsSaturated;
// its routers, following load from one, become two; a new route lands on edge (which routes per
// router alone would not pick: the two shards tie and default comes first by name); no existing
// route moves; a forged report is clamped and said, and changes nothing in cluster s2; once the
// load falls the condition clears and the routers go back to one; the client sees no failed
// request throughout.
func loadSpec(ctx context.Context, t *testing.T, in ShardsSpecInput, profile string, shards []v1alpha1.ShardSpec) {
	seed, u1, zone := in.Seed, in.Users[0], in.DNS.Zone
	for i := range shards {
		shards[i].Load = &v1alpha1.ShardLoadSpec{RequestsPerSecond: ptr.To[int32](5), ReporterImage: framework.KeepalivedImage}
	}
	// The default shard's routers follow load, from one to its two nodes.
	shards[0].Replicas = ptr.To[int32](1)
	shards[0].Load.MaxReplicas, shards[0].Load.TargetPercent = ptr.To[int32](2), ptr.To[int32](50)
	shards[0].Load.ScaleDownDelay = &metav1.Duration{Duration: 20 * time.Second}
	routers := func() (int32, int32) {
		d := &appsv1.Deployment{}
		if err := u1.Client.Get(ctx, client.ObjectKey{Namespace: names.Namespace, Name: names.RouterName("default")}, d); err != nil {
			return -1, -1
		}
		return *d.Spec.Replicas, d.Status.ReadyReplicas
	}
	updateProfile(ctx, t, seed, profile, func(p *v1alpha1.IngressProfile) {
		p.Spec.Shards, p.Spec.Allocation.Strategy = shards, v1alpha1.StrategyLeastUtilized
	})
	loads := func(id string) map[string]v1alpha1.ShardLoadStatus {
		out := map[string]v1alpha1.ShardLoadStatus{}
		for _, l := range getCI(ctx, t, seed, key(id)).Status.ShardLoad {
			out[l.Shard] = l
		}
		return out
	}
	// Every router reports once it rolled out with its reporter.
	eventually(ctx, t, 4*time.Minute, func() (bool, string) {
		l := loads("s1")
		want, ready := routers()
		return want == 1 && ready == 1 && l["default"].ReportingRouters >= 1 && l["edge"].ReportingRouters == 2 &&
				l["default"].State == v1alpha1.LoadNormal && l["edge"].State == v1alpha1.LoadNormal,
			fmt.Sprintf("default routers %d (%d ready), status.shardLoad %+v", want, ready, l)
	})
	waitCondition(ctx, t, seed, key("s1"), v1alpha1.ConditionShardsSaturated, metav1.ConditionFalse, v1alpha1.ReasonWithinCapacity)

	// Some 15 requests/s through the default shard's routers, against 5 per router (bounded: the
	// suite's other tests share the two cores).
	host := "app.s1." + zone
	stop := loopClientEvery(ctx, t, 40*time.Millisecond, in.DNS, in.Fabric, host)
	waitCondition(ctx, t, seed, key("s1"), v1alpha1.ConditionShardsSaturated, metav1.ConditionTrue, v1alpha1.ReasonSaturated)
	if l := loads("s1"); l["default"].State != v1alpha1.LoadSaturated || l["default"].UtilizationPercent < 80 ||
		l["edge"].State != v1alpha1.LoadNormal {
		t.Fatalf("status.shardLoad under load: %+v", l)
	}
	// What the alert and the dashboard read, from the real controller's /metrics.
	m, err := in.Controller.Metrics()
	must(t, err)
	if !strings.Contains(m, `shardgate_shard_saturated{cluster="default/s1",shard="default"} 1`) {
		t.Errorf("metrics lack the saturated gauge of s1's default shard")
	}
	checkDashboardMetrics(t, m, "shardgate_shard_utilization", "shardgate_shard_saturated")
	// Its routers follow: a second one on the other node, in DNS once ready.
	eventually(ctx, t, 2*time.Minute, func() (bool, string) {
		want, ready := routers()
		return want == 2 && ready == 2, fmt.Sprintf("default routers %d (%d ready), want 2 under load", want, ready)
	})
	waitAnswer(ctx, t, in.DNS, host, framework.AnswerIs(in.Nodes[2].IP, in.Nodes[3].IP))
	must(t, u1.Client.Create(ctx, hostlessIngress("under-load")))
	shardOf := func(name string) string {
		ing := &networkingv1.Ingress{}
		if err := u1.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, ing); err != nil {
			return err.Error()
		}
		return ing.Labels[v1alpha1.ShardLabel]
	}
	eventually(ctx, t, 30*time.Second, func() (bool, string) {
		got := shardOf("under-load")
		return got == "edge", fmt.Sprintf("new route on shard %q, want edge (the default shard is saturated)", got)
	})
	if shardOf("web-default") != v1alpha1.DefaultShardName || shardOf("web-edge") != "edge" {
		t.Fatalf("an allocated route moved under load: web-default on %q, web-edge on %q", shardOf("web-default"), shardOf("web-edge"))
	}
	events := &corev1.EventList{}
	must(t, seed.Client.List(ctx, events, client.InNamespace("default")))
	saturated, scaled := false, false
	for _, e := range events.Items {
		saturated = saturated || (e.Reason == v1alpha1.ReasonSaturated && e.InvolvedObject.Name == "s1")
		scaled = scaled || (e.Reason == "RoutersFollowLoad" && e.InvolvedObject.Name == "s1")
	}
	if !saturated || !scaled {
		t.Errorf("Events on ClusterIngress s1: Saturated %v, RoutersFollowLoad %v", saturated, scaled)
	}

	// A forged report (the cluster owner writes any Lease): clamped and said, in s1 only.
	forged := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: names.Namespace,
		Name: names.RouterLoadLeaseName("edge", "forged"), Labels: names.RouterSelector("edge"),
		Annotations: map[string]string{routerload.ReportAnnotation: "rps=1e300 conns=-1"}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("forged"), LeaseDurationSeconds: ptr.To[int32](3600),
			RenewTime: ptr.To(metav1.NewMicroTime(time.Now()))}}
	must(t, u1.Client.Create(ctx, forged))
	eventually(ctx, t, 45*time.Second, func() (bool, string) {
		l := loads("s1")["edge"]
		return strings.Contains(l.Clamped, "forged: rps,conns"), fmt.Sprintf("edge load %+v", l)
	})
	for _, l := range loads("s2") {
		if l.Clamped != "" || l.State != v1alpha1.LoadUnknown {
			t.Errorf("cluster s2 (simulated routers, no reports) changed by s1's forged report: %+v", l)
		}
	}
	must(t, u1.Client.Delete(ctx, forged))

	n, failed := stop()
	t.Logf("load: %d requests through the default shard, %d failed", n, failed)
	if failed > 0 {
		t.Errorf("%d of %d requests failed under load, while its routers went from one to two", failed, n)
	}
	// A light client (about 1 request/s) while the routers go back to one: the router that goes
	// leaves DNS, drains, then stops.
	stop = loopClientEvery(ctx, t, time.Second, in.DNS, in.Fabric, host)
	eventually(ctx, t, 3*time.Minute, func() (bool, string) {
		want, ready := routers()
		return want == 1 && ready == 1, fmt.Sprintf("default routers %d (%d ready), want 1 after the load", want, ready)
	})
	waitAnswer(ctx, t, in.DNS, host, func(a framework.Answer) bool { return len(a.Values) == 1 })
	time.Sleep(25 * time.Second) // the router that goes serves out its preStop, then stops
	n, failed = stop()
	t.Logf("after the load: %d requests while the routers went back to one, %d failed", n, failed)
	if n < 20 || failed > 0 {
		t.Errorf("%d of %d requests failed while the routers went back to one", failed, n)
	}
	eventually(ctx, t, 2*time.Minute, func() (bool, string) {
		ci := getCI(ctx, t, seed, key("s1"))
		for _, c := range ci.Status.Conditions {
			if c.Type == v1alpha1.ConditionShardsSaturated {
				return c.Status == metav1.ConditionFalse, fmt.Sprintf("ShardsSaturated %s %s: %s", c.Status, c.Reason, c.Message)
			}
		}
		return false, "no ShardsSaturated"
	})
}

// hostlessIngress is an Ingress without a host for Service web:80: the strategy picks its shard.
func hostlessIngress(name string) *networkingv1.Ingress {
	ing := shardIngress(name, "")
	ing.Spec.Rules[0].Host = ""
	return ing
}
