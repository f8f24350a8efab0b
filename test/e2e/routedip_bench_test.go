package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/test/framework"
)

// failure is one way a routed IP's holder stops being fit: fail breaks it and returns the undo,
// visible says whether the API shows it yet.
type failure struct {
	name    string
	rounds  int
	fail    func(holder *framework.RealNode) (undo func())
	visible func(holder *framework.RealNode) bool
}

// BenchmarkRoutedIPMove prints, per kind of holder failure and per firewall mode, the time
// from the failure being visible in the user cluster's API to HTTP answering again through the
// new holder (the cloud routing the address there and a request through it returning 200), and
// how many of the requests sent every 50 ms meanwhile failed. Moves run through real Jobs on the
// seed's real node calling the simulated cloud: with firewallPostAllow false (the default) a move
// is an updateFirewall Job then an updateRoutedIP Job, with true the assignment alone.
func BenchmarkRoutedIPMove(b *testing.B) {
	for _, postAllow := range []bool{false, true} {
		b.Run(map[bool]string{false: "pre", true: "post"}[postAllow], func(b *testing.B) {
			for range b.N {
				benchRoutedIPFailover(b, postAllow)
			}
		})
	}
}

func benchRoutedIPFailover(b *testing.B, postAllow bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	traefik, _ := render.FlavourFor(v1alpha1.FlavourTraefik)
	e := startRoutedIP(ctx, b, postAllow, traefik)
	u, zone := e.env.Users[0], e.env.DNS.Zone
	settled := func() {
		eventually(ctx, b, 4*time.Minute, func() (bool, string) {
			r := e.record(routedIP1)
			serving := servingNodes(ctx, b, u, names.Namespace, names.RouterName("edge"))
			if r.Reason != v1alpha1.ReasonRoutedIPsAssigned || len(serving) != 2 || e.cloudHolder(routedIP1) != e.providerOf[r.Node] {
				return false, fmt.Sprintf("record %s/%s, serving %v", r.Node, r.Reason, serving)
			}
			code, _, err := e.fabric.GetQuick(ctx, routedIP1+":80", e.host, 500*time.Millisecond)
			return err == nil && code == 200, fmt.Sprintf("HTTP %d %v", code, err)
		})
	}
	notServing := func(n *framework.RealNode) bool {
		return !servingNodes(ctx, b, u, names.Namespace, names.RouterName("edge"))[n.Name]
	}
	cordon := func(n *framework.RealNode) func() {
		setUnschedulable(ctx, b, u, n.Name, true)
		return func() { setUnschedulable(ctx, b, u, n.Name, false) }
	}
	failures := []failure{
		{name: "router hung (SIGSTOP)", rounds: 2, visible: notServing, fail: func(n *framework.RealNode) func() {
			procs, err := framework.ProcessesWithArg("--providers.kubernetesingress.ingressendpoint.hostname=edge.r1." + zone)
			must(b, err)
			var stopped []int
			for _, p := range procs {
				if n.Runs(p.PID) {
					must(b, syscallStop(p.PID))
					stopped = append(stopped, p.PID)
				}
			}
			return func() {
				for _, pid := range stopped {
					_ = syscallCont(pid)
				}
			}
		}},
		{name: "router gone (cordoned, pod deleted)", rounds: 2, visible: notServing, fail: func(n *framework.RealNode) func() {
			undo := cordon(n)
			pods := &corev1.PodList{}
			must(b, u.Client.List(ctx, pods, client.InNamespace(names.Namespace), client.MatchingLabels(names.RouterSelector("edge"))))
			for i := range pods.Items {
				if pods.Items[i].Spec.NodeName == n.Name {
					must(b, u.Client.Delete(ctx, &pods.Items[i], client.GracePeriodSeconds(1)))
				}
			}
			return undo
		}},
		{name: "drained (cordoned)", rounds: 2, fail: cordon, visible: func(n *framework.RealNode) bool {
			node := &corev1.Node{}
			must(b, u.Client.Get(ctx, client.ObjectKey{Name: n.Name}, node))
			return node.Spec.Unschedulable
		}},
		{name: "NotReady (kubelet hung)", rounds: 1, fail: func(n *framework.RealNode) func() {
			must(b, n.PauseKubelet(true))
			return func() { _ = n.PauseKubelet(false) }
		}, visible: func(n *framework.RealNode) bool {
			node := &corev1.Node{}
			must(b, u.Client.Get(ctx, client.ObjectKey{Name: n.Name}, node))
			return !slices.ContainsFunc(node.Status.Conditions, func(c corev1.NodeCondition) bool {
				return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
			})
		}},
	}
	var lines []string
	for _, f := range failures {
		var took []time.Duration
		var sent, failed int
		for range f.rounds {
			settled()
			holderName := e.record(routedIP1).Node
			var holder *framework.RealNode
			for _, n := range e.env.Nodes[0] {
				if n.Name == holderName {
					holder = n
				}
			}
			stop := loopHTTP(ctx, b, e.fabric, routedIP1, e.host)
			undo := f.fail(holder)
			var visible time.Time
			poll(ctx, b, 3*time.Minute, func() (bool, string) {
				visible = time.Now()
				return f.visible(holder), "failure of " + holder.Name + " not visible in the API"
			})
			poll(ctx, b, 3*time.Minute, func() (bool, string) {
				h := e.cloudHolder(routedIP1)
				return h != "" && h != e.providerOf[holderName], "the cloud still routes to " + holderName
			})
			poll(ctx, b, time.Minute, func() (bool, string) {
				code, body, err := e.fabric.GetQuick(ctx, routedIP1+":80", e.host, 300*time.Millisecond)
				return err == nil && code == 200 && strings.Contains(body, "hello from web"), fmt.Sprintf("%d %v", code, err)
			})
			took = append(took, time.Since(visible))
			n, bad := stop()
			sent, failed = sent+n, failed+bad
			undo()
		}
		slices.Sort(took)
		lines = append(lines, fmt.Sprintf("  %-36s n=%d  min %6s  max %6s   requests %4d, failed %3d",
			f.name, len(took), took[0].Round(10*time.Millisecond), took[len(took)-1].Round(10*time.Millisecond), sent, failed))
	}
	class := &v1alpha1.ClusterRoutedIPClass{}
	must(b, e.env.Seed.Client.Get(ctx, client.ObjectKey{Name: "sim"}, class))
	cs, err := e.cloud.State(ctx)
	must(b, err)
	b.Logf("class firewall %v (conditions %v); the cloud's firewall %v after %d assign calls", class.Status.Firewall, class.Status.Conditions, cs.Firewall, cs.AssignCalls)
	b.Logf("routed IP failover, firewallPostAllow=%v: failure visible in the API → HTTP 200 through the new holder\n%s", postAllow, strings.Join(lines, "\n"))
}

// poll is eventually at a 20 ms interval, for measurements (eventually's 200 ms would be the
// resolution of the figures).
func poll(ctx context.Context, tb testing.TB, timeout time.Duration, cond func() (bool, string)) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, msg := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			tb.Fatalf("condition not met within %s: %s", timeout, msg)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
