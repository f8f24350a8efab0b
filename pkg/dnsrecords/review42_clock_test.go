package dnsrecords

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// TestReview42KubeletClockSkewSkipsTheSettle (Low-Medium; who: nobody hostile — a user-cluster
// node whose clock is off from the seed's, which O also controls but which only hurts O's own
// cluster).
//
// What: readyFor measures the settle as seed-now minus the pod's Ready lastTransitionTime, a time
// stamped by the node's kubelet clock and stored in whole seconds. A node clock ahead of the
// seed's by 1-2 s stamps the transition "in the future", which readyFor counts as settled: the
// router is published at its first ping, 0 s of Traefik's 5 s settle, i.e. exactly the 404s the
// change is for. A node clock behind by X shortens the settle by X (5 s behind: none at all). Both
// happen with a broken NTP on a VM, and nothing in status says the settle was skipped.
//
// Fix: measure the settle on the seed's clock: remember, per pod UID and Ready transition, when
// the seed first saw it Ready, and publish at first-seen + settle (bounded, so never a wait that
// does not end; the kubelet's stamp may only shorten the wait when it is in the past and within a
// sane bound, e.g. not older than first-seen minus the informer's lag).
func TestReview42KubeletClockSkewSkipsTheSettle(t *testing.T) {
	seedNow := time.Date(2026, 11, 28, 12, 0, 0, 300_000_000, time.UTC) // the router turned Ready at this instant
	shard := v1alpha1.ShardSpec{Name: "default", Publishing: v1alpha1.PublishHostNetwork}
	nodes := []corev1.Node{node("n1", internal("10.0.0.1"))}
	// A clock behind is not caught: the stamp is all there is, as for a Deployment's minReadySeconds
	// (known, in the closing note; the fix named above keeps state per pod).
	for _, skew := range []time.Duration{2 * time.Second} {
		stamp := seedNow.Add(skew).Truncate(time.Second) // the kubelet's clock, stored in whole seconds
		pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "r1", Labels: map[string]string{v1alpha1.ShardLabel: "default"}},
			Spec: corev1.PodSpec{NodeName: "n1"},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
				LastTransitionTime: metav1.NewTime(stamp)}}}}
		got, recheck := TargetNodes(shard, nodes, []corev1.Pod{pod}, 5*time.Second, seedNow)
		if len(got) != 0 {
			t.Errorf("node clock %+v off the seed's: a router Ready for 0 s is published at once (recheck %s); "+
				"it should wait its 5 s settle", skew, recheck)
		}
	}
}
