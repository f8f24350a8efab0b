package agent

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/vip"
)

// A joining node (n3) whose configuration names it waits while n1, the live master, still runs
// the configuration without n3, and starts once n1 reports running one with n3 (on fe9d909 it
// started as soon as its own copy named it).
func TestJoiningNodeWaitsForItsPeers(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "keepalived.conf")
	if err := os.WriteFile(conf, []byte("vrrp_instance edge_0 {\n@n1  priority 200\n@n3  priority 199\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cs, reporter := peerRunning(t, "n1", "n1", "n2")
	o := Options{Source: Files{Config: conf}, NodeName: "n3", ReloadCheck: 20 * time.Millisecond, Reporter: reporter}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan Rendered, 1)
	go func() {
		rep := newReports(o, "lo")
		go rep.run(ctx)
		r, err := waitToStart(ctx, o, rep)
		if err == nil {
			started <- r
		}
	}()
	select {
	case <-started:
		t.Fatal("n3 started while n1 runs a configuration without it")
	case <-time.After(500 * time.Millisecond):
	}
	// n3 reported itself meanwhile: not running keepalived.
	if r, ok := report(ctx, cs, "n3"); !ok || r.Running() || r.Node != "n3" {
		t.Errorf("n3's report while waiting: %+v", r)
	}
	if _, err := cs.CoordinationV1().Leases(names.Namespace).Update(ctx, peerLease("n1", "n1", "n3"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("n3 did not start once n1 runs a configuration naming it")
	}
}

// peerRunning is an API server (a fake clientset) where peer reports running a configuration
// naming peers, and n3's Reporter for shard edge against it.
func peerRunning(t *testing.T, peer string, peers ...string) (*fake.Clientset, *Reporter) {
	t.Helper()
	cs := fake.NewClientset(peerLease(peer, peers...))
	return cs, &Reporter{NewClient: func() (kubernetes.Interface, error) { return cs, nil }, Namespace: names.Namespace,
		Shard: "edge", Node: "n3"}
}

// peerLease is node's fresh report of running a configuration naming peers.
func peerLease(node string, peers ...string) *coordinationv1.Lease {
	r := vip.NodeReport{Node: node, Config: "old", Peers: peers}
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: names.Namespace,
		Name: names.VIPNodeLeaseName("edge", node), Annotations: r.Annotations()},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(node), RenewTime: &metav1.MicroTime{Time: time.Now()},
			LeaseDurationSeconds: ptr.To[int32](60)}}
}

// report is node's report as its Lease in shard edge says it.
func report(ctx context.Context, cs kubernetes.Interface, node string) (vip.NodeReport, bool) {
	l, err := cs.CoordinationV1().Leases(names.Namespace).Get(ctx, names.VIPNodeLeaseName("edge", node), metav1.GetOptions{})
	if err != nil {
		return vip.NodeReport{}, false
	}
	return vip.ParseReport(l)
}
