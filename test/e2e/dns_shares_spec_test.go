package e2e

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/dnsrecords"
	"github.com/shardgate/shardgate/test/framework"
)

// TestDNSSharesHandOver: the chart's external-dns with externalDNS.shares=2 (two upsert-only
// shares and the janitor) publishes every cluster; going to 3 shares (the new share's instance
// started, the controller restarted with --dns-shares=3) moves some clusters' DNSEndpoints to the
// new share, and BIND answers every cluster's name with all its addresses throughout the move; a
// moved cluster's node change is published by the new share alone (the janitor frozen); a deleted
// cluster's names are deleted by the janitor. (Each instance runs with the arguments the chart
// renders; the last share's filter is "not any other share's".)
func TestDNSSharesHandOver(t *testing.T) {
	t.Parallel() // see main_test.go
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	began := time.Now()
	defer func() { t.Logf("took %s", time.Since(began).Round(time.Second)) }()
	env := framework.StartEnvironment(t, framework.EnvironmentOptions{UserClusters: 1})
	seed := env.Seed
	bind := framework.StartBIND(t, framework.DefaultZone)
	zone := bind.Zone
	mux := framework.StartClusterMux(t, env.Users[0])
	const n = 12
	createProfileB(ctx, t, seed)
	createBenchClusters(ctx, t, seed, n, func(int) *framework.ClusterMux { return mux })
	moved := -1
	for i := range n {
		if dnsrecords.Share("default", fmt.Sprintf("u%d", i), 3) == "2" {
			moved = i
			break
		}
	}
	if moved < 0 {
		t.Fatal("set-up: no cluster moves to the third share")
	}

	set := []string{"externalDNS.shares=2", "externalDNS.janitorInterval=2s"}
	edns := startChartExternalDNS(t, seed, bind, "info", set...)
	janitor := edns["x-shardgate-external-dns"]
	ctrl := framework.StartController(t, seed, "--dns-zone="+zone, "--dns-shares=2", "--source-removal-grace=1s")
	name := func(i int) string { return fmt.Sprintf("x.u%d.%s", i, zone) }
	for i := range n {
		waitAnswer(ctx, t, bind, name(i), func(a framework.Answer) bool { return len(a.Values) == 3 })
	}

	// From here, a lost answer is any answer without the cluster's three addresses.
	var lost, asked atomic.Int64
	stop := loop(ctx, 20*time.Millisecond, func(ctx context.Context, q int) (bool, bool) {
		a, err := bind.Lookup(ctx, name(q%n), dns.TypeA)
		if err != nil {
			return false, false
		}
		asked.Add(1)
		if len(a.Values) != 3 && !(q%n == moved && len(a.Values) == 2) {
			lost.Add(1)
			t.Logf("%s answered %s", name(q%n), a)
			return true, true
		}
		return true, false
	})
	// The janitor is frozen: the old shares deleting the moved records, or the new share not
	// taking them over, could not be hidden by it. Then what `helm upgrade --set
	// externalDNS.shares=3` does: every share's instance replaced (Recreate: the old one gone
	// before the new one starts), the new share's started, the controller restarted.
	must(t, janitor.Pause(true))
	next := chartExternalDNSArgs(t, zone, "externalDNS.shares=3", "externalDNS.janitorInterval=2s")
	for k := range 3 {
		name := fmt.Sprintf("x-shardgate-external-dns-%d", k)
		if old, ok := edns[name]; ok {
			must(t, old.Process().Stop())
		}
		framework.StartExternalDNS(t, seed, bind, framework.ExternalDNSOptions{LogLevel: "info", Args: next[name]})
	}
	must(t, ctrl.Kill())
	framework.StartController(t, seed, "--dns-zone="+zone, "--dns-shares=3", "--source-removal-grace=1s")
	eventually(ctx, t, 30*time.Second, func() (bool, string) {
		ep := &dnsrecords.DNSEndpoint{}
		if err := seed.Client.Get(ctx, key(fmt.Sprintf("u%d", moved)), ep); err != nil {
			return false, err.Error()
		}
		return ep.Labels[v1alpha1.DNSShareLabel] == "2", fmt.Sprintf("u%d has labels %v", moved, ep.Labels)
	})
	// Several syncs of every instance after the move.
	time.Sleep(3 * time.Second)

	// The moved cluster's node change: only the new share can publish it now.
	must(t, mux.SetNodeReady(ctx, fmt.Sprintf("u%d", moved), "n1", false))
	waitAnswer(ctx, t, bind, name(moved), func(a framework.Answer) bool { return len(a.Values) == 2 })
	sent, _ := stop()
	if lost.Load() > 0 || sent < 100 {
		t.Fatalf("%d of %d answers lost while clusters moved between shares (%d queries sent)", lost.Load(), asked.Load(), sent)
	}
	t.Logf("0 of %d answers lost while u%d moved to the new share", asked.Load(), moved)

	// Deleting a cluster's kubeconfig Secret deletes its DNSEndpoint (after the grace period); the
	// janitor its records.
	must(t, janitor.Pause(false))
	must(t, seed.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "u0"}}))
	waitAnswer(ctx, t, bind, name(0), framework.AnswerNXDomain)
	other := (moved + 1) % n
	if other == 0 {
		other = (moved + 2) % n
	}
	waitAnswer(ctx, t, bind, name(other), func(a framework.Answer) bool { return len(a.Values) == 3 })
}
