package dnsrecords

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// settledTargets is TargetNodes for routers that settle at once.
func settledTargets(s v1alpha1.ShardSpec, nodes []corev1.Node, pods []corev1.Pod) []corev1.Node {
	out, _ := TargetNodes(s, nodes, pods, 0, time.Now())
	return out
}

// A HostNetwork shard publishes a node only once its router has been Ready for the flavour's
// settle; a router still settling is published at the recheck TargetNodes returns.
func TestTargetNodesWaitForTheRoutersSettle(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	shard := v1alpha1.ShardSpec{Name: "default", Publishing: v1alpha1.PublishHostNetwork}
	router := func(node string, status corev1.ConditionStatus, readySince time.Time) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "r-" + node, Labels: map[string]string{v1alpha1.ShardLabel: "default"}},
			Spec: corev1.PodSpec{NodeName: node},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status,
				LastTransitionTime: metav1.NewTime(readySince)}}}}
	}
	nodes := []corev1.Node{node("n1", internal("10.0.0.1")), node("n2", internal("10.0.0.2")), node("n3", internal("10.0.0.3"))}
	cases := []struct {
		name        string
		settle      time.Duration
		pods        []corev1.Pod
		want        []string
		wantRecheck time.Duration
	}{
		{"no settle: Ready is enough", 0,
			[]corev1.Pod{router("n1", corev1.ConditionTrue, now)}, []string{"n1"}, 0},
		{"settled and settling", 5 * time.Second,
			[]corev1.Pod{router("n1", corev1.ConditionTrue, now.Add(-time.Minute)), router("n2", corev1.ConditionTrue, now.Add(-2*time.Second)),
				router("n3", corev1.ConditionTrue, now.Add(-4*time.Second))},
			[]string{"n1"}, time.Second},
		{"exactly settled", 5 * time.Second,
			[]corev1.Pod{router("n1", corev1.ConditionTrue, now.Add(-5*time.Second))}, []string{"n1"}, 0},
		{"not ready: no recheck (a pod change wakes DNS)", 5 * time.Second,
			[]corev1.Pod{router("n1", corev1.ConditionFalse, now.Add(-time.Second))}, nil, 0},
		{"a kubelet clock a little ahead of the seed's: the settle from now", 5 * time.Second,
			[]corev1.Pod{router("n1", corev1.ConditionTrue, now.Add(2*time.Second))}, nil, 5 * time.Second},
		{"a kubelet clock far ahead of the seed's counts as settled", 5 * time.Second,
			[]corev1.Pod{router("n1", corev1.ConditionTrue, now.Add(time.Hour))}, []string{"n1"}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, recheck := TargetNodes(shard, nodes, c.pods, c.settle, now)
			var names []string
			for _, n := range got {
				names = append(names, n.Name)
			}
			if !slices.Equal(names, c.want) || recheck != c.wantRecheck {
				t.Errorf("TargetNodes = %v, recheck %s; want %v, recheck %s", names, recheck, c.want, c.wantRecheck)
			}
		})
	}
}
