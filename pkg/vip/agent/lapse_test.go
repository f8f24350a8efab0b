package agent

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/vip"
)

// TestAnUnreadableInterfaceDoesNotRenewTheLastReportForever (attacker's review): once the
// interface cannot be read, the node's report lapses after leaseSeconds instead of renewing the
// last one (which said a VIP the node may long have lost is held, fresh, for as long as the
// failure lasts: a false split for the seed).
func TestAnUnreadableInterfaceDoesNotRenewTheLastReportForever(t *testing.T) {
	cs := fake.NewClientset()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rep := startReports(ctx, cs)
	rep.loaded(Rendered{Config: "c", VIPs: "127.0.0.1 1"})
	rep.send()
	time.Sleep(1500 * time.Millisecond)
	rep.iface = "nosuch-if0" // unreadable from now on
	end := time.Now().Add(time.Duration(leaseSeconds+3) * time.Second)
	for time.Now().Before(end) {
		rep.send()
		time.Sleep(200 * time.Millisecond)
	}
	l, err := cs.CoordinationV1().Leases(names.Namespace).Get(ctx, names.VIPNodeLeaseName("edge", "n1"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, ok := vip.ParseReport(l)
	if ok && r.Expires.After(time.Now()) && len(r.Held) > 0 {
		t.Fatalf("%ds after the interface became unreadable the Lease still says, fresh until %s: held %v",
			leaseSeconds+3, r.Expires.Format(time.RFC3339), r.Held)
	}
}
