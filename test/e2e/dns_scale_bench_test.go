package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/miekg/dns"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/test/framework"
)

// BenchmarkDNSAtSeedScale measures Shardgate's records where users ask for them: the seed's
// real external-dns (as the chart runs it: the crd source, the TXT registry, --log-level=info;
// interval 1 s) writing to real BIND, with SHARDGATE_DNS_SCALE_CLUSTERS user clusters (default
// "100,500,1000", one run each so the growth shows) served by cluster muxes as in
// BenchmarkSeedScale. Per size: controller start → every DNSEndpoint written and → every cluster
// answered by BIND; node change → BIND's answer p50/p99 one cluster at a time, 100 and 250 at once
// (timed from each node's write); external-dns' time between completed syncs, CPU and RSS; BIND's
// CPU; the zone transfer external-dns makes every sync (records, bytes, TXT registry records).
// SHARDGATE_DNS_SCALE_EXTERNALDNS_FLAGS adds flags to external-dns (e.g. "--events").
func BenchmarkDNSAtSeedScale(b *testing.B) {
	sizes := []int{100, 500, 1000}
	if v := os.Getenv("SHARDGATE_DNS_SCALE_CLUSTERS"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				b.Fatalf("SHARDGATE_DNS_SCALE_CLUSTERS: %q", v)
			}
			sizes = append(sizes, n)
		}
	}
	extra := strings.Fields(os.Getenv("SHARDGATE_DNS_SCALE_EXTERNALDNS_FLAGS"))
	for range b.N {
		for _, n := range sizes {
			b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) { dnsScaleRun(b, n, extra) })
		}
	}
}

func dnsScaleRun(b *testing.B, n int, extra []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	const perBackend = 250
	env := framework.StartEnvironment(b, framework.EnvironmentOptions{UserClusters: (n + perBackend - 1) / perBackend})
	seed := env.Seed
	bind := framework.StartBIND(b, framework.DefaultZone)
	zone := bind.Zone
	var muxes []*framework.ClusterMux
	for _, u := range env.Users {
		muxes = append(muxes, framework.StartClusterMux(b, u))
	}
	mux := func(i int) *framework.ClusterMux { return muxes[i/perBackend] }
	id := func(i int) string { return fmt.Sprintf("u%d", i) }
	createProfileB(ctx, b, seed)
	createBenchClusters(ctx, b, seed, n, mux)
	edns := framework.StartExternalDNS(b, seed, bind, framework.ExternalDNSOptions{LogLevel: "info", Args: extra})
	ednsPID, bindPID := edns.Process().PID(), bind.Process().PID()
	ednsCPU0, bindCPU0 := procSeconds(b, ednsPID), procSeconds(b, bindPID)

	started := time.Now()
	framework.StartController(b, seed, "--dns-zone="+zone)
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	waitAllTargets(ctx, b, seed, n, func(int) int { return 3 })
	written := time.Since(started)
	answeredAt := answered(ctx, b, bind, zone, all, 3, 15*time.Minute)
	answeredAll := slices.MaxFunc(answeredAt, time.Time.Compare).Sub(started)
	ednsStart, bindStart := procSeconds(b, ednsPID)-ednsCPU0, procSeconds(b, bindPID)-bindCPU0

	// Steady state: what one sync costs when nothing changes.
	ednsCPU1, bindCPU1 := procSeconds(b, ednsPID), procSeconds(b, bindPID)
	syncs := syncIntervals(ctx, b, edns.MetricsAddr, 30*time.Second)
	ednsSteady, bindSteady := (procSeconds(b, ednsPID)-ednsCPU1)/30, (procSeconds(b, bindPID)-bindCPU1)/30
	axfr, err := bind.Transfer(ctx)
	must(b, err)

	// Node changes, timed from each node's write to BIND's answer showing it.
	set := func(i int, ready bool) error { return mux(i).SetNodeReady(ctx, id(i), "n1", ready) }
	var one []time.Duration
	for s := range 20 {
		i := (s * 37) % n
		for _, ready := range []bool{false, true} {
			at := time.Now()
			must(b, set(i, ready))
			one = append(one, answered(ctx, b, bind, zone, []int{i}, map[bool]int{false: 2, true: 3}[ready], 5*time.Minute)[0].Sub(at))
		}
	}
	batch := func(k int) []time.Duration {
		var out []time.Duration
		for _, ready := range []bool{false, true} {
			ids := all[:k]
			at := make([]time.Time, k)
			parallel(b, k, func(i int) error { at[i] = time.Now(); return set(i, ready) })
			seen := answered(ctx, b, bind, zone, ids, map[bool]int{false: 2, true: 3}[ready], 10*time.Minute)
			for i := range ids {
				out = append(out, max(0, seen[i].Sub(at[i])))
			}
		}
		return out
	}
	hundred := batch(min(n, 100))
	k := min(n, 250)
	ednsCPU2 := procSeconds(b, ednsPID)
	quarter := batch(k)
	ednsQuarter := procSeconds(b, ednsPID) - ednsCPU2

	p := func(d []time.Duration, q int) time.Duration {
		d = slices.Clone(d)
		slices.Sort(d)
		return d[(len(d)*q+99)/100-1].Round(10 * time.Millisecond)
	}
	fmt.Printf("DNS at seed scale, %d clusters (3 nodes each), one external-dns (interval 1s%s) and BIND:\n", n, flagNote(extra))
	fmt.Printf("  controller start -> every DNSEndpoint written %s; -> every cluster answered by BIND %s (goal <= 90 s at 1,000)\n",
		written.Round(100*time.Millisecond), answeredAll.Round(100*time.Millisecond))
	fmt.Printf("    CPU-seconds until then: external-dns %.1f, BIND %.1f\n", ednsStart, bindStart)
	fmt.Printf("  node change -> BIND answer (out and back in): one at a time p50 %s p99 %s; %d at once p50 %s p99 %s; "+
		"%d at once p50 %s p99 %s (goal p99 <= 2.5 s one at a time and 100 at once)\n",
		p(one, 50), p(one, 99), min(n, 100), p(hundred, 50), p(hundred, 99), k, p(quarter, 50), p(quarter, 99))
	fmt.Printf("  external-dns: a completed sync every %s (p50; p99 %s) with nothing changing, %.2f CPU-seconds/s then, "+
		"%.1f CPU-seconds for the %d-at-once changes; RSS %d MiB\n", p(syncs, 50), p(syncs, 99), ednsSteady, ednsQuarter, k,
		rssKiB(b, ednsPID)/1024)
	fmt.Printf("  BIND: %.2f CPU-seconds/s with nothing changing; RSS %d MiB\n", bindSteady, rssKiB(b, bindPID)/1024)
	fmt.Printf("  zone transfer each sync: %d records (%d TXT registry records, %d A), %d KiB\n", axfr.Records,
		axfr.ByType["TXT"], axfr.ByType["A"], axfr.Bytes/1024)
	b.ReportMetric(answeredAll.Seconds(), "all-answered-s")
	b.ReportMetric(p(one, 99).Seconds(), "one-change-p99-s")
	b.ReportMetric(p(hundred, 99).Seconds(), "100-change-p99-s")
	b.ReportMetric(float64(rssKiB(b, ednsPID))/1024, "external-dns-MiB")
}

// createBenchClusters gives clusters u0..u<n-1> three ready nodes each (n1-n3, addresses
// 127.<100+i/250>.<i%250>.<j>) on their muxes and registers each with a kubeconfig Secret.
func createBenchClusters(ctx context.Context, b *testing.B, seed *framework.ControlPlane, n int,
	mux func(int) *framework.ClusterMux) {
	parallel(b, n, func(i int) error {
		id := fmt.Sprintf("u%d", i)
		for j := 1; j <= 3; j++ {
			if err := mux(i).CreateNode(ctx, id, fmt.Sprintf("n%d", j), fmt.Sprintf("127.%d.%d.%d", 100+i/250, i%250, j)); err != nil {
				return err
			}
		}
		kc, err := mux(i).AddCluster(ctx, id)
		if err != nil {
			return err
		}
		return seed.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: id,
			Labels: map[string]string{v1alpha1.KubeconfigSecretLabel: "true"}}, Data: map[string][]byte{"value": kc}})
	})
}

func flagNote(extra []string) string {
	if len(extra) == 0 {
		return ""
	}
	return ", " + strings.Join(extra, " ")
}

// answered polls BIND (16 queries in flight) until x.u<i>.<zone> answers want addresses for every
// i in ids, and returns when each first did.
func answered(ctx context.Context, b *testing.B, bind *framework.DNSServer, zone string, ids []int, want int,
	within time.Duration) []time.Time {
	b.Helper()
	out := make([]time.Time, len(ids))
	var mu sync.Mutex
	pending := len(ids)
	deadline := time.Now().Add(within)
	for pending > 0 {
		if time.Now().After(deadline) {
			b.Fatalf("after %s, %d of %d clusters not answered with %d addresses", within, pending, len(ids), want)
		}
		work := make(chan int)
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				for x := range work {
					a, err := bind.Lookup(ctx, fmt.Sprintf("x.u%d.%s", ids[x], zone), dns.TypeA)
					if err == nil && len(a.Values) == want {
						mu.Lock()
						out[x] = time.Now()
						pending--
						mu.Unlock()
					}
				}
			})
		}
		for x := range ids {
			if out[x].IsZero() {
				work <- x
			}
		}
		close(work)
		wg.Wait()
		// A pass over many names is a load of its own on BIND: a pause between passes.
		if pending > 0 {
			time.Sleep(min(50*time.Millisecond, time.Duration(len(ids))*10*time.Millisecond))
		}
	}
	return out
}

// syncIntervals samples external-dns' last-sync timestamp every 100 ms for d and returns the
// times between the syncs it completed.
func syncIntervals(ctx context.Context, b *testing.B, metricsAddr string, d time.Duration) []time.Duration {
	b.Helper()
	var stamps []float64
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		v, ok := metricValue(ctx, metricsAddr, "external_dns_controller_last_sync_timestamp_seconds")
		if ok && (len(stamps) == 0 || v != stamps[len(stamps)-1]) {
			stamps = append(stamps, v)
		}
	}
	var out []time.Duration
	for i := 1; i < len(stamps); i++ {
		out = append(out, time.Duration((stamps[i]-stamps[i-1])*float64(time.Second)))
	}
	if len(out) == 0 {
		b.Fatalf("external-dns completed no sync in %s", d)
	}
	return out
}

// metricValue reads one unlabelled metric from a Prometheus endpoint.
func metricValue(ctx context.Context, addr, name string) (float64, bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return 0, false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, false
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f, err == nil
		}
	}
	return 0, false
}

// procSeconds is a process's user+system CPU time in seconds (/proc/<pid>/stat, 100 ticks a second).
func procSeconds(b *testing.B, pid int) float64 {
	b.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	must(b, err)
	// The command name may hold spaces: fields count from after its closing parenthesis.
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("/proc/%d/stat: %q", pid, stat)
	}
	return float64(utime+stime) / 100
}
