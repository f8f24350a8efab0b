package render

import (
	"net/netip"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/vip"
)

// TestReview41VIPAgentIgnoresTheRoutersSettle: f91aae7 made a Traefik router ready only after two
// pings in a row, 5 s apart (Settle 2, successThreshold 2; now a 5 s settle DNS waits), because Traefik answers /ping 1-2 s
// before its Kubernetes provider's routes are loaded (a CI run saw a 404 for a user's host). The
// commit says readiness gates the VIP agent's health too, but routerURL passes only the path and
// port: the VIP agent (pkg/vip/agent, --probe-interval 200ms) writes "healthy" at the FIRST 200
// from /ping. keepalived preempts (no nopreempt) and a VIP's home node has priority 200 over the
// others' 199..., so when a home node's router restarts (rollout, upgrade, OOM kill, node reboot)
// its VIP moves back to it ~200 ms after Traefik first answers ping, before its routes are
// loaded: every host of the shard answers 404 for a second or two on each router restart.
// Who: nobody needs to attack (the operator's upgrade, or any tenant whose config churn restarts
// routers); impact: the exact outage f91aae7 fixes for DNS-published shards stays for VIP shards.
// Fix: give the agent the flavour's settle (e.g. --router-settle=<n> answers in a row, one
// readiness period apart, or a settle duration) and have it write healthy only after them.
func TestReview41VIPAgentIgnoresTheRoutersSettle(t *testing.T) {
	if (Traefik{}).Readiness().Settle != 5*time.Second {
		t.Fatalf("premise: Traefik's readiness settle is %s", (Traefik{}).Readiness().Settle)
	}
	s := v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "edge", Publishing: v1alpha1.PublishVIP,
		VIP: &v1alpha1.VIPSettings{Pool: []string{"192.0.2.0/28"}, Count: 1}}})[0]
	in := &VIPInput{Instances: []vip.Instance{{VIP: netip.MustParseAddr("192.0.2.1"), RouterID: 3}},
		Nodes: []vip.Node{{Name: "n1", Address: netip.MustParseAddr("10.0.0.1")}}}
	objs, err := RenderShard(Traefik{}, RenderInput{Domain: "edge.c1.example.test", Shard: s, DNSTTL: 60, VIP: in})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		d := as[appsv1.Deployment](t, o)
		var router, agent []string
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Name == vipAgentName {
				agent = append(c.Args, "env")
			} else if c.ReadinessProbe != nil {
				router = append(router, c.Name)
			}
		}
		if agent == nil || router == nil {
			t.Fatalf("premise: no router or VIP agent in %s", o.GetName())
		}
		// Told in the environment (ROUTER_SETTLE), which an older agent image ignores.
		told := false
		for _, c := range d.Spec.Template.Spec.Containers {
			for _, e := range c.Env {
				if c.Name == vipAgentName && e.Name == "ROUTER_SETTLE" && e.Value == "5s" {
					told = true
				}
			}
		}
		if !told {
			t.Errorf("the VIP agent judges the router healthy at its first ping (args %q): a restarted home node takes "+
				"its VIP back before Traefik's routes are loaded, which DNS waits for (the flavour's readiness settle)",
				agent)
		}
	}
}
