package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/pkg/dnsrecords"
	"github.com/shardgate/shardgate/test/framework"
)

// BenchmarkShardingFaults is the fault loop: three replicas share 30 clusters while nodes come
// and go; 50 times a random replica is SIGKILLed at a random moment and started again. Meanwhile
// every cluster's name is asked of BIND over and over: an answer that lacks a live cluster's
// records counts as missing. After every kill the system must converge (every cluster answers
// its current nodes) with exactly one DNSEndpoint per cluster (no orphan, no duplicate), and the
// audit log must show no cluster written by two replicas at once. It prints the hand-over times.
func BenchmarkShardingFaults(b *testing.B) {
	const clusters, replicas, kills = 30, 3, 50
	for range b.N {
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
		env, auditLog := auditedEnvironment(b, clusters)
		seed, zone := env.Seed, env.DNS.Zone
		createProfileB(ctx, b, seed)
		for i, u := range env.Users {
			benchCluster(ctx, b, seed, u, i, fmt.Sprintf("c%d", i))
		}
		args := func(id string) []string {
			return []string{"--dns-zone=" + zone, "--sharding", "--replica-id=" + id, "--leader-election-namespace=default"}
		}
		ctls := make([]*framework.Controller, replicas)
		for r := range replicas {
			ctls[r] = framework.StartController(b, seed, args(fmt.Sprintf("r%d", r+1))...)
		}
		// Which nodes each cluster has now (the loop adds and removes a fourth).
		var mu sync.Mutex
		want := make([][]string, clusters)
		for i := range clusters {
			want[i] = []string{fmt.Sprintf("127.0.%d.1", 100+i), fmt.Sprintf("127.0.%d.2", 100+i), fmt.Sprintf("127.0.%d.3", 100+i)}
		}
		answers := func(i int) []string {
			a, err := env.DNS.Lookup(ctx, fmt.Sprintf("x.c%d.%s", i, zone), 1)
			if err != nil {
				return nil
			}
			v := slices.Clone(a.Values)
			slices.Sort(v)
			return v
		}
		converged := func(within time.Duration, after string) time.Duration {
			start := time.Now()
			for i := range clusters {
				for {
					mu.Lock()
					w := want[i]
					mu.Unlock()
					if slices.Equal(answers(i), w) {
						break
					}
					if time.Since(start) > within {
						b.Fatalf("cluster c%d answers %v, want %v, %s after %s", i, answers(i), w, within, after)
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
			return time.Since(start)
		}
		converged(3*time.Minute, "the start")

		// The watcher: every cluster must answer with records all the time (the node set may lag
		// a change by a moment; an empty answer is a record missing).
		var missing []string
		stop := make(chan struct{})
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			for {
				for i := range clusters {
					if len(answers(i)) == 0 {
						mu.Lock()
						missing = append(missing, fmt.Sprintf("c%d at %s", i, time.Now().Format("15:04:05.000")))
						mu.Unlock()
					}
				}
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
				}
			}
		}()

		rng := rand.New(rand.NewPCG(1, 2))
		var handovers []time.Duration
		b.ResetTimer()
		for k := range kills {
			// Churn: a cluster gains or loses its fourth node.
			i := rng.IntN(clusters)
			fourth := fmt.Sprintf("127.0.%d.4", 100+i)
			mu.Lock()
			has := slices.Contains(want[i], fourth)
			mu.Unlock()
			if has {
				if err := env.Users[i].DeleteNode(ctx, "n4"); err != nil {
					b.Fatal(err)
				}
				mu.Lock()
				want[i] = want[i][:3]
				mu.Unlock()
			} else {
				createReadyNode(ctx, b, env.Users[i], "n4", fourth)
				mu.Lock()
				want[i] = append(slices.Clone(want[i]), fourth)
				mu.Unlock()
			}
			// A random moment: up to 2 s into the change's convergence.
			time.Sleep(time.Duration(rng.IntN(2000)) * time.Millisecond)
			r := rng.IntN(replicas)
			if err := ctls[r].Kill(); err != nil {
				b.Fatal(err)
			}
			handovers = append(handovers, converged(60*time.Second, fmt.Sprintf("kill %d (r%d)", k+1, r+1)))
			if err := ctls[r].Restart(); err != nil {
				b.Fatal(err)
			}
			var eps dnsrecords.DNSEndpointList
			if err := seed.Client.List(ctx, &eps, client.InNamespace("default")); err != nil {
				b.Fatal(err)
			}
			if len(eps.Items) != clusters {
				b.Fatalf("kill %d: %d DNSEndpoints for %d clusters", k+1, len(eps.Items), clusters)
			}
		}
		close(stop)
		<-watched
		b.StopTimer()
		converged(60*time.Second, "the last restart")
		slices.Sort(handovers)
		p := func(q int) time.Duration { return handovers[(len(handovers)*q+99)/100-1] }
		b.ReportMetric(p(50).Seconds(), "converge-p50-s")
		b.ReportMetric(p(99).Seconds(), "converge-p99-s")
		b.ReportMetric(float64(len(missing)), "missing-answers")
		fmt.Printf("sharding faults: %d SIGKILLs of a random replica among %d sharing %d clusters during node churn: converged every time, "+
			"p50 %s p99 %s max %s from the kill; %d DNSEndpoints each time; answers missing a live cluster's records: %d %v\n",
			kills, replicas, clusters, p(50).Round(100*time.Millisecond), p(99).Round(100*time.Millisecond),
			handovers[len(handovers)-1].Round(100*time.Millisecond), clusters, len(missing), missing)
		if len(missing) > 0 {
			b.Errorf("records of live clusters went missing from BIND: %v", missing)
		}
		checkFencedWrites(b, auditLog, time.Time{}, "")
		cancel()
	}
}
