package dnsrecords

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// TestAttackHLoadEvictedRouterNamesCordonedNode: RouterNodes counts every router pod object that is
// not terminating, whatever its phase. A router evicted from node-2 (memory or disk pressure,
// or a graceful node shutdown) stays as a Failed pod object until its ReplicaSet is cleaned up
// or pod GC's 12,500-pod threshold; the Deployment runs its replacement on node-3. When node-2 is
// then cordoned for its maintenance, status.shards[].nodesLeftOut and doctor say node-2 "left the
// shard's DNS answer (Cordoned)", next step "uncordon node-2": uncordoning brings nothing back, no
// router runs there. The reader is told a cordon cost the shard an address it never had.
func TestAttackHLoadEvictedRouterNamesCordonedNode(t *testing.T) {
	shard := v1alpha1.ShardSpec{Name: "default", Publishing: v1alpha1.PublishHostNetwork}
	router := func(name, nodeName string, phase corev1.PodPhase, ready corev1.ConditionStatus) corev1.Pod {
		p := corev1.Pod{}
		p.Name, p.Labels = name, map[string]string{v1alpha1.ShardLabel: "default"}
		p.Spec.NodeName = nodeName
		p.Status.Phase = phase
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}
		return p
	}
	nodes := []corev1.Node{node("node-1", internal("10.0.0.1")), node("node-2", internal("10.0.0.2"), cordoned),
		node("node-3", internal("10.0.0.3"))}
	pods := []corev1.Pod{router("r1", "node-1", corev1.PodRunning, corev1.ConditionTrue),
		router("r2-evicted", "node-2", corev1.PodFailed, corev1.ConditionFalse),
		router("r2", "node-3", corev1.PodRunning, corev1.ConditionTrue)}
	p := Desired(Input{Settings: defaults(), Shards: []ShardInput{{Name: "default", Domain: "c1.z",
		Nodes: settledTargets(shard, nodes, pods), RouterNodes: RouterNodes(shard, nodes, pods)}}})
	if slices.ContainsFunc(p.Shards[0].LeftOut, func(n v1alpha1.NodeLeftOut) bool { return n.Name == "node-2" }) {
		t.Errorf("node-2 runs no router (only an evicted, Failed pod object): left out %+v, ready %v",
			p.Shards[0].LeftOut, p.Shards[0].ReadyNodes)
	}
}
