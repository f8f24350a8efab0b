package clusteraccess

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/shardgate/shardgate/test/framework"
)

// TestNodeChangesWakeTheirSubscribers: against a real API server, a node added or relabelled
// wakes both the DNS-style (ChangeNodes) and the shard-style (ChangeNodeLabels) subscriber; a
// readiness flip wakes only the first; a heartbeat wakes neither.
func TestNodeChangesWakeTheirSubscribers(t *testing.T) {
	cp := userAPIServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kc, err := framework.KubeconfigFromConfig(cp.Config, "user")
	if err != nil {
		t.Fatal(err)
	}
	e, _ := engageObservable(t, kc)
	defer e.Stop()
	// Subscribed in this order, notify sends to labels before nodes: once nodes has an event,
	// labels has every event it will get from the same change.
	labels, nodes := e.Subscribe(ChangeNodeLabels), e.Subscribe(ChangeNodes)

	// woken makes a change and says which subscribers it woke (beyond the phase events both get).
	woken := func(name string, change func() error, wantNodes bool) (gotNodes, gotLabels int) {
		t.Helper()
		quiet(labels, nodes)
		if err := change(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if wantNodes {
			select {
			case <-nodes:
				gotNodes++
			case <-time.After(20 * time.Second):
				t.Fatalf("%s: no node event within 20 s", name)
			}
		} else {
			time.Sleep(2 * time.Second) // nothing should come; a wrong event would within this
		}
		gotNodes += drain(nodes)
		return gotNodes, drain(labels)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"role": "edge"}}}
	setReady := func(s corev1.ConditionStatus, reason string) func() error {
		return func() error {
			node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: s, Reason: reason, LastHeartbeatTime: metav1.Now()}}
			return cp.Client.Status().Update(ctx, node)
		}
	}
	for _, tc := range []struct {
		name              string
		change            func() error
		nodes, nodeLabels bool
	}{
		{"added", func() error { return cp.Client.Create(ctx, node) }, true, true},
		{"ready", setReady(corev1.ConditionTrue, "KubeletReady"), true, false},
		{"heartbeat", setReady(corev1.ConditionTrue, "StillReady"), false, false},
		{"relabelled", func() error { node.Labels["role"] = "general"; return cp.Client.Update(ctx, node) }, true, true},
		{"not ready", setReady(corev1.ConditionFalse, "KubeletNotReady"), true, false},
		{"removed", func() error { return cp.Client.Delete(ctx, node) }, true, true},
	} {
		gotNodes, gotLabels := woken(tc.name, tc.change, tc.nodes)
		// A phase event may come meanwhile, to both: what tells is the difference.
		var ok bool
		switch {
		case !tc.nodes:
			ok = gotNodes == 0 && gotLabels == 0
		case tc.nodeLabels:
			ok = gotLabels == gotNodes
		default:
			ok = gotNodes == gotLabels+1
		}
		if !ok {
			t.Errorf("%s: %d node events, %d label events; want nodes %v, labels %v", tc.name, gotNodes, gotLabels, tc.nodes, tc.nodeLabels)
		}
	}
}

// quiet drains the channels until none has had an event for half a second.
func quiet(chs ...<-chan event.GenericEvent) {
	for {
		n := 0
		time.Sleep(500 * time.Millisecond)
		for _, ch := range chs {
			n += drain(ch)
		}
		if n == 0 {
			return
		}
	}
}

// drain takes what ch holds now and says how many.
func drain(ch <-chan event.GenericEvent) int {
	for n := 0; ; n++ {
		select {
		case <-ch:
		default:
			return n
		}
	}
}
