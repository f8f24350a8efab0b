package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/shardgate/shardgate/test/framework"
)

// BenchmarkDNSSideBySide: the same 10 user clusters and the same BIND, published two ways at once.
// Shardgate (one controller + one seed external-dns reading its DNSEndpoints) publishes
// *.s<i>.<zone>; the set-up a seed operator would run without Shardgate — one external-dns per
// user cluster with --source=node and --fqdn-template=*.e<i>.<zone> — publishes the other name
// of the same nodes. Each node change (a node added, a node removed) is timed until BIND's
// answer changed for each name (p50/p99); then a node turns NotReady, and the run says which
// set-up drops it at all; last, what each set-up costs (processes, resident memory).
func BenchmarkDNSSideBySide(b *testing.B) {
	const clusters, samples = 10, 20
	for range b.N {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		env := framework.StartEnvironment(b, framework.EnvironmentOptions{UserClusters: clusters, DNS: true})
		seed, zone := env.Seed, env.DNS.Zone
		createProfileB(ctx, b, seed)
		perCluster := make([]*framework.ExternalDNS, clusters)
		for i, u := range env.Users {
			benchCluster(ctx, b, seed, u, i, fmt.Sprintf("s%d", i))
			perCluster[i] = framework.StartExternalDNS(b, u, env.DNS, framework.ExternalDNSOptions{OwnerID: fmt.Sprintf("e%d", i),
				NodeFQDN: fmt.Sprintf("*.e%d.%s", i, zone)})
		}
		ctl := framework.StartController(b, seed, "--dns-zone="+zone)
		answers := func(name string) []string {
			a, err := env.DNS.Lookup(ctx, name, dns.TypeA)
			if err != nil {
				return nil
			}
			return a.Values
		}
		waitBoth := func(i int, want []string) (shardgate, nodeSource time.Duration) {
			start := time.Now()
			deadline := start.Add(2 * time.Minute)
			for shardgate == 0 || nodeSource == 0 {
				if shardgate == 0 && slices.Equal(answers(fmt.Sprintf("x.s%d.%s", i, zone)), want) {
					shardgate = time.Since(start)
				}
				if nodeSource == 0 && slices.Equal(answers(fmt.Sprintf("x.e%d.%s", i, zone)), want) {
					nodeSource = time.Since(start)
				}
				if time.Now().After(deadline) {
					b.Fatalf("cluster %d: BIND never answered %v (Shardgate %s, per-cluster external-dns %s)", i, want, shardgate, nodeSource)
				}
				time.Sleep(20 * time.Millisecond)
			}
			return shardgate, nodeSource
		}
		three := func(i int) []string {
			return []string{fmt.Sprintf("127.0.%d.1", 100+i), fmt.Sprintf("127.0.%d.2", 100+i), fmt.Sprintf("127.0.%d.3", 100+i)}
		}
		for i := range clusters {
			waitBoth(i, three(i))
		}

		var sg, nd []time.Duration
		b.ResetTimer()
		for s := range samples {
			i := s % clusters
			u := env.Users[i]
			fourth := fmt.Sprintf("127.0.%d.4", 100+i)
			var d1, d2 time.Duration
			if (s/clusters)%2 == 0 {
				createReadyNode(ctx, b, u, "n4", fourth)
				d1, d2 = waitBoth(i, append(three(i), fourth))
			} else {
				if err := u.DeleteNode(ctx, "n4"); err != nil {
					b.Fatal(err)
				}
				d1, d2 = waitBoth(i, three(i))
			}
			sg, nd = append(sg, d1), append(nd, d2)
		}
		b.StopTimer()
		p := func(l []time.Duration, q int) time.Duration {
			l = slices.Clone(l)
			slices.Sort(l)
			return l[(len(l)*q+99)/100-1]
		}
		b.ReportMetric(p(sg, 50).Seconds(), "shardgate-p50-s")
		b.ReportMetric(p(sg, 99).Seconds(), "shardgate-p99-s")
		b.ReportMetric(p(nd, 50).Seconds(), "per-cluster-p50-s")
		b.ReportMetric(p(nd, 99).Seconds(), "per-cluster-p99-s")

		// A node that is NotReady (kubelet gone, node unreachable) but still listed.
		setReadyStatus(ctx, b, env.Users[0], "n3", false)
		start := time.Now()
		two := three(0)[:2]
		var sgDrop, ndDrop time.Duration
		for time.Since(start) < 60*time.Second && (sgDrop == 0 || ndDrop == 0) {
			if sgDrop == 0 && slices.Equal(answers("x.s0."+zone), two) {
				sgDrop = time.Since(start)
			}
			if ndDrop == 0 && slices.Equal(answers("x.e0."+zone), two) {
				ndDrop = time.Since(start)
			}
			time.Sleep(50 * time.Millisecond)
		}
		dropped := func(d time.Duration) string {
			if d == 0 {
				return "never (still answered after 60s)"
			}
			return "after " + d.Round(10*time.Millisecond).String()
		}

		// What each set-up runs: Shardgate's controller and the seed's external-dns, against
		// ten external-dns processes.
		sgRSS := rssKiB(b, ctl.PID()) + rssKiB(b, env.ExternalDNS.Process().PID())
		var ndRSS int
		for _, e := range perCluster {
			ndRSS += rssKiB(b, e.Process().PID())
		}
		b.ReportMetric(float64(sgRSS)/1024, "shardgate-MiB")
		b.ReportMetric(float64(ndRSS)/1024, "per-cluster-MiB")
		fmt.Printf("dns side by side, %d clusters, one BIND, %d node changes (added or removed) → BIND's answer changed:\n", clusters, samples)
		fmt.Printf("  Shardgate + 1 seed external-dns:         p50 %-8s p99 %-8s  2 processes, %d MiB RSS; NotReady node dropped %s\n",
			p(sg, 50).Round(time.Millisecond), p(sg, 99).Round(time.Millisecond), sgRSS/1024, dropped(sgDrop))
		fmt.Printf("  external-dns --source=node per cluster:  p50 %-8s p99 %-8s %2d processes, %d MiB RSS; NotReady node dropped %s\n",
			p(nd, 50).Round(time.Millisecond), p(nd, 99).Round(time.Millisecond), clusters, ndRSS/1024, dropped(ndDrop))
		cancel()
	}
}

// rssKiB is a process's resident memory (VmRSS) in KiB.
func rssKiB(b *testing.B, pid int) int {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatalf("no VmRSS for %d", pid)
	return 0
}
