package dnsrecords

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// attack33OldEligible is Eligible as it was at ca45224, before LeftOut replaced it.
func attack33OldEligible(n *corev1.Node, sel labels.Selector) bool {
	if n.DeletionTimestamp != nil || n.Spec.Unschedulable {
		return false
	}
	if sel != nil && !sel.Matches(labels.Set(n.Labels)) {
		return false
	}
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			return false
		}
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func attack33Taint(key string, e corev1.TaintEffect) nodeOpt {
	return func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Effect: e}) }
}

// Regression: LeftOut(n) == "" must say exactly what Eligible(n) said, on every node shape.
// It does not when a node carries two Ready conditions (O writes node status; the list is not
// validated unique): Eligible (and Kubernetes' own GetNodeCondition) took the first, LeftOut
// takes any True one. TrimNode keeps only the first Ready condition in the cache, which masks
// this in the controller today; the exported function's contract still changed.
func TestAttack33LeftOutAgreesWithOldEligible(t *testing.T) {
	sel := labels.SelectorFromSet(labels.Set{"ingress": "true"})
	in := label("ingress", "true")
	dupReady := func(first, second corev1.ConditionStatus) nodeOpt {
		return func(n *corev1.Node) {
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: first}, {Type: corev1.NodeReady, Status: second}}
		}
	}
	unknown := func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionUnknown }
	for _, n := range []corev1.Node{
		node("ok", in),
		node("cordoned", in, cordoned),
		node("notready", in, notReady),
		node("unknown", in, unknown),
		node("nocondition", in, noCondition),
		node("deleting", in, deleting),
		node("deleting-cordoned", in, deleting, cordoned),
		node("noexecute", in, taint(corev1.TaintEffectNoExecute)),
		node("noexecute-notready", in, taint(corev1.TaintEffectNoExecute), notReady),
		node("noschedule", in, taint(corev1.TaintEffectNoSchedule)),
		node("unselected", cordoned),
		node("unselected-ok"),
		node("dup-false-then-true", in, dupReady(corev1.ConditionFalse, corev1.ConditionTrue)),
		node("dup-true-then-false", in, dupReady(corev1.ConditionTrue, corev1.ConditionFalse)),
	} {
		for _, s := range []labels.Selector{nil, sel} {
			old := attack33OldEligible(&n, s)
			why := LeftOut(&n, s)
			if old != (why == "") {
				t.Errorf("node %s (selector %v): old Eligible=%v, LeftOut=%q: which nodes get DNS changed", n.Name, s, old, why)
			}
		}
	}
}

// Kubernetes' node lifecycle controller taints every NotReady node
// node.kubernetes.io/not-ready:NoExecute (unreachable:NoExecute for Ready=Unknown) within
// seconds (taint-based evictions, on by default since 1.18). Because LeftOut checks taints before
// Ready, a dead kubelet is reported as NoExecuteTaint, and doctor tells the 3 a.m. operator to
// "remove the taint when its cause is gone" instead of "check the node's kubelet and network".
// Likewise a node that died while cordoned for maintenance reads Cordoned: "uncordon it".
func TestAttack33SickNodeIsReportedAsSick(t *testing.T) {
	unknown := func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionUnknown }
	for _, tc := range []struct {
		n    corev1.Node
		want v1alpha1.NodeLeftOutReason
	}{
		{node("dead-kubelet", notReady, attack33Taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute),
			attack33Taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoSchedule)), v1alpha1.NodeNotReady},
		{node("partitioned", unknown, attack33Taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute),
			attack33Taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoSchedule)), v1alpha1.NodeNotReady},
		{node("died-in-maintenance", notReady, cordoned), v1alpha1.NodeNotReady},
	} {
		if got := LeftOut(&tc.n, nil); got != tc.want {
			t.Errorf("%s: LeftOut says %s, want %s (doctor's next step follows the reason)", tc.n.Name, got, tc.want)
		}
	}
}

// The cap of 16 keeps the first nodes by name, whatever their reason. With a NodePort shard on
// every node and dns.ingressNodeSelector picking the edge nodes (a healthy, intended setup),
// every worker is "NotSelected"; a cordoned or sick edge node whose name sorts after 16 workers
// never reaches status or doctor, and nothing says the list was cut. O's node names decide it.
func TestAttack33CapHidesTheNodeThatMatters(t *testing.T) {
	s := defaults()
	s.IngressNodes = labels.SelectorFromSet(labels.Set{"edge": "true"})
	var nodes []corev1.Node
	for i := range 20 {
		nodes = append(nodes, node(fmt.Sprintf("worker-%02d", i), internal(fmt.Sprintf("10.0.1.%d", i+1))))
	}
	nodes = append(nodes,
		node("zz-edge-1", internal("10.0.0.1"), label("edge", "true")),
		node("zz-edge-2", internal("10.0.0.2"), label("edge", "true"), cordoned))
	p := Desired(Input{Settings: s, Shards: []ShardInput{{Name: "np", Domain: "np.c1.z", Nodes: nodes}}})
	got := p.Shards[0].LeftOut
	if !slices.ContainsFunc(got, func(n v1alpha1.NodeLeftOut) bool { return n.Name == "zz-edge-2" }) {
		t.Errorf("the cordoned edge node is not among the nodes left out: %d shown, all %v; "+
			"the cap keeps 16 NotSelected workers by name and drops the one the operator must act on", len(got), reasons(got))
	}
}

func reasons(l []v1alpha1.NodeLeftOut) map[v1alpha1.NodeLeftOutReason]int {
	m := map[v1alpha1.NodeLeftOutReason]int{}
	for _, n := range l {
		m[n.Reason]++
	}
	return m
}

// Status write churn: before nodesLeftOut, a worker node joining or leaving a NodePort shard's
// node set without being an ingress node changed nothing in the plan, so no status write. Now
// every such node (autoscaler scale-up/down, any cordon or taint on a worker) rewrites the
// ClusterIngress status in the seed, with DNS unchanged.
func TestAttack33WorkerChurnRewritesStatusWithoutDNSChange(t *testing.T) {
	s := defaults()
	s.IngressNodes = labels.SelectorFromSet(labels.Set{"edge": "true"})
	edge := node("edge-1", internal("10.0.0.1"), label("edge", "true"))
	before := Desired(Input{Settings: s, Shards: []ShardInput{{Name: "np", Domain: "np.c1.z",
		Nodes: []corev1.Node{edge, node("worker-b", internal("10.0.1.2"))}}}})
	for name, nodes := range map[string][]corev1.Node{
		"a worker added":    {edge, node("worker-a", internal("10.0.1.1")), node("worker-b", internal("10.0.1.2"))},
		"a worker cordoned": {edge, node("worker-b", internal("10.0.1.2"), cordoned)},
		"a worker removed":  {edge},
	} {
		after := Desired(Input{Settings: s, Shards: []ShardInput{{Name: "np", Domain: "np.c1.z", Nodes: nodes}}})
		if !slices.Equal(before.Targets, after.Targets) {
			t.Fatalf("%s: targets changed %v -> %v; the test means DNS-neutral changes", name, before.Targets, after.Targets)
		}
		if !slices.Equal(before.Shards[0].LeftOut, after.Shards[0].LeftOut) {
			t.Errorf("%s (not an ingress node, DNS unchanged): status.shards[].nodesLeftOut %v -> %v, a seed status write "+
				"that did not happen before", name, before.Shards[0].LeftOut, after.Shards[0].LeftOut)
		}
	}
}

// The default publishing (HostNetwork) lists only nodes running a Ready router pod. When a node's
// kubelet dies, the node lifecycle controller marks its pods NotReady as it sets Ready=Unknown
// (MarkPodsNotReady), so the dead node leaves TargetNodes at once and is named nowhere: neither
// in readyNodes nor in nodesLeftOut. The commit's headline case ("a sick node") is what
// nodesLeftOut cannot show for host-network shards; only a cordon (pods stay Ready) shows.
func TestAttack33HostNetworkSickNodeIsNamedNowhere(t *testing.T) {
	shard := v1alpha1.ShardSpec{Name: "default", Publishing: v1alpha1.PublishHostNetwork}
	router := func(name, nodeName string, ready corev1.ConditionStatus) corev1.Pod {
		p := corev1.Pod{}
		p.Name, p.Labels = name, map[string]string{v1alpha1.ShardLabel: "default"}
		p.Spec.NodeName = nodeName
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}
		return p
	}
	unknown := func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionUnknown }
	nodes := []corev1.Node{
		node("node-1", internal("10.0.0.1")),
		node("node-2", internal("10.0.0.2"), unknown, attack33Taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute)),
	}
	// As the node lifecycle controller leaves them: node-2's router marked NotReady with its node.
	pods := []corev1.Pod{router("r1", "node-1", corev1.ConditionTrue), router("r2", "node-2", corev1.ConditionFalse)}
	p := Desired(Input{Settings: defaults(), Shards: []ShardInput{{Name: "default", Domain: "c1.z",
		Nodes: settledTargets(shard, nodes, pods), RouterNodes: RouterNodes(shard, nodes, pods)}}})
	if !slices.ContainsFunc(p.Shards[0].LeftOut, func(n v1alpha1.NodeLeftOut) bool { return n.Name == "node-2" }) {
		t.Errorf("node-2 (kubelet gone, its router pod marked NotReady) is named nowhere: ready %v, left out %v",
			p.Shards[0].ReadyNodes, p.Shards[0].LeftOut)
	}
}

// A node the profile never publishes (not matched by dns.ingressNodeSelector) that is also
// cordoned or being deleted reads Cordoned / Deleting, because those are checked first: doctor
// then says it "left the shard's DNS answer" and to "kubectl uncordon" it, though uncordoning
// puts nothing in DNS. Its lasting reason (NotSelected) should win over a transient one.
func TestAttack33UnselectedNodeIsNotReportedAsCordoned(t *testing.T) {
	sel := labels.SelectorFromSet(labels.Set{"edge": "true"})
	for _, n := range []corev1.Node{
		node("worker-cordoned", internal("10.0.1.1"), cordoned),
		node("worker-deleting", internal("10.0.1.2"), deleting),
	} {
		if got := LeftOut(&n, sel); got != v1alpha1.NodeNotSelected {
			t.Errorf("%s (not an ingress node): LeftOut says %s; doctor tells the operator to act on a node DNS never uses", n.Name, got)
		}
	}
}
