package agent

import (
	"context"
	"net/netip"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/vip"
)

// While the API server hangs, handing over a report returns at once (the probe loop that writes
// keepalived's health file must not wait 5 s per tick, as it did when it sent the report itself),
// and once the API server answers, the newest report is the one sent.
func TestReportsNeverWaitForTheAPIServer(t *testing.T) {
	cs := fake.NewClientset()
	release := make(chan struct{})
	cs.PrependReactor("*", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		<-release
		return false, nil, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rep := startReports(ctx, cs)
	start := time.Now()
	for i := range 20 {
		rep.loaded(Rendered{Config: "c", VIPs: "127.0.0.1 1"})
		rep.now.Peers = []string{"n1", string(rune('a' + i))}
		rep.send()
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("20 reports handed over in %s while the API server hangs", took)
	}
	close(release)
	deadline := time.Now().Add(10 * time.Second)
	for {
		l, err := cs.CoordinationV1().Leases(names.Namespace).Get(ctx, names.VIPNodeLeaseName("edge", "n1"), metav1.GetOptions{})
		if err == nil {
			r, ok := vip.ParseReport(l)
			if ok && len(r.Peers) == 2 && r.Peers[1] == "t" && len(r.Held) == 1 && r.Held[0] == netip.MustParseAddr("127.0.0.1") {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the Lease says %+v, want the newest report (peers n1,t; 127.0.0.1 held)", r)
			}
		} else if time.Now().After(deadline) {
			t.Fatalf("no report sent after the API server answers: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startReports runs node n1's reports (shard edge, interface lo) against cs until ctx ends.
func startReports(ctx context.Context, cs kubernetes.Interface) *reports {
	o := Options{Reporter: &Reporter{NewClient: func() (kubernetes.Interface, error) { return cs, nil },
		Namespace: names.Namespace, Shard: "edge", Node: "n1"}}
	rep := newReports(o, "lo")
	go rep.run(ctx)
	return rep
}
