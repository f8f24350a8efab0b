package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/dnsrecords"
	"github.com/shardgate/shardgate/test/framework"
)

// BenchmarkSeedScale engages SHARDGATE_SCALE_CLUSTERS user clusters (default 1,000) plus one
// unreachable cluster in twenty (a kubeconfig whose server refuses connections) on one replica,
// and prints what #18 measures: heap, RSS and goroutines per engaged cluster (against the same
// controller on the same seed with no cluster), the time from the controller's start to every
// DNSEndpoint published, seed writes per cluster to publish and at steady state, requests a
// second to the user API servers at steady state, and node change → DNSEndpoint p50/p99 one
// cluster at a time and with up to 250 clusters changing at once.
// The user clusters are distinct clusters, each with its own server URL, TLS server name (so its
// own connection), token, three nodes, namespaces and objects, served 250 to a real
// kube-apiserver through a framework.ClusterMux (a real API server per cluster costs ~275 MiB).
func BenchmarkSeedScale(b *testing.B) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("SHARDGATE_SCALE_CLUSTERS")); err == nil && v > 0 {
		n = v
	}
	dead := max(2, n/20)
	for range b.N {
		scaleRun(b, n, dead)
	}
}

func scaleRun(b *testing.B, n, dead int) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	start := time.Now()
	const perBackend = 250
	env := framework.StartEnvironment(b, framework.EnvironmentOptions{UserClusters: (n + perBackend - 1) / perBackend})
	seed := env.Seed
	var muxes []*framework.ClusterMux
	for _, u := range env.Users {
		muxes = append(muxes, framework.StartClusterMux(b, u))
	}
	mux := func(i int) *framework.ClusterMux { return muxes[i/perBackend] }
	id := func(i int) string { return fmt.Sprintf("u%d", i) }
	createProfileB(ctx, b, seed)
	flags := []string{"--dns-zone=bench.test"}

	// The controller's own cost with no cluster, on the same seed.
	idle := framework.StartController(b, seed, flags...)
	time.Sleep(15 * time.Second)
	base := scrape(b, idle, seed.Host())
	must(b, idle.Kill())

	parallel(b, n, func(i int) error {
		for j := 1; j <= 3; j++ {
			if err := mux(i).CreateNode(ctx, id(i), fmt.Sprintf("n%d", j), fmt.Sprintf("127.%d.%d.%d", 100+i/250, i%250, j)); err != nil {
				return err
			}
		}
		kc, err := mux(i).Kubeconfig(id(i))
		if err != nil {
			return err
		}
		return seed.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: id(i),
			Labels: map[string]string{v1alpha1.KubeconfigSecretLabel: "true"}}, Data: map[string][]byte{"value": kc}})
	})
	fmt.Printf("seed scale: %d user clusters on %d API servers set up in %s\n", n, len(env.Users), time.Since(start).Round(time.Second))
	for i := range dead {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		must(b, err)
		addr := l.Addr().String()
		must(b, l.Close())
		kc, err := framework.KubeconfigFor("https://"+addr, nil, "token")
		must(b, err)
		must(b, seed.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("dead%d", i),
			Labels: map[string]string{v1alpha1.KubeconfigSecretLabel: "true"}}, Data: map[string][]byte{"value": kc}}))
	}

	writes0 := seedWrites(ctx, b, seed)
	started := time.Now()
	ctl := framework.StartController(b, seed, flags...)
	waitAllTargets(ctx, b, seed, n, func(int) int { return 3 })
	published := time.Since(started)
	writesToPublish := seedWrites(ctx, b, seed) - writes0
	time.Sleep(20 * time.Second) // let status settle
	engaged := scrape(b, ctl, seed.Host())

	// Steady state: nothing changes for 60 s.
	seedBefore, userBefore := seedWrites(ctx, b, seed), engaged.userRequests
	time.Sleep(60 * time.Second)
	steady := scrape(b, ctl, seed.Host())
	steadySeed := seedWrites(ctx, b, seed) - seedBefore
	userRate := (steady.userRequests - userBefore) / 60

	// One cluster changing at a time.
	var one []time.Duration
	for s := range 20 {
		i := (s * 37) % n
		t0 := time.Now()
		must(b, mux(i).SetNodeReady(ctx, id(i), "n1", false))
		waitTargets(ctx, b, seed, id(i), 2)
		one = append(one, time.Since(t0))
		must(b, mux(i).SetNodeReady(ctx, id(i), "n1", true))
		waitTargets(ctx, b, seed, id(i), 3)
	}
	// Up to 250 clusters changing at once, out and back in.
	k := min(n, 250)
	all := allChange(ctx, b, seed, k, func(i int, ready bool) error { return mux(i).SetNodeReady(ctx, id(i), "n1", ready) }, false)
	all = append(all, allChange(ctx, b, seed, k, func(i int, ready bool) error { return mux(i).SetNodeReady(ctx, id(i), "n1", ready) }, true)...)

	p := func(d []time.Duration, q int) time.Duration {
		slices.Sort(d)
		return d[(len(d)*q+99)/100-1].Round(time.Millisecond)
	}
	per := func(after, before float64) float64 { return (after - before) / float64(n) }
	fmt.Printf("seed scale, %d engaged clusters (+%d unreachable) on one replica:\n", n, dead)
	fmt.Printf("  per engaged cluster: RSS %.2f MiB (goal <= 1.5), heap %.2f MiB, goroutines %.0f (goal <= 40)\n",
		per(engaged.rss, base.rss)/(1<<20), per(engaged.heap, base.heap)/(1<<20), per(engaged.goroutines, base.goroutines))
	fmt.Printf("  controller start -> all %d DNSEndpoints published: %s (goal <= 60 s at 1,000)\n", n, published.Round(100*time.Millisecond))
	fmt.Printf("  seed writes to publish: %.1f per cluster (goal <= 3); 409 conflicts the controller got: %.0f\n",
		float64(writesToPublish)/float64(n), engaged.conflicts)
	fmt.Printf("  steady state (60 s): seed writes %d (goal 0); user API requests %.3f/s per cluster (goal <= 0.1)\n", steadySeed, userRate/float64(n))
	fmt.Printf("  node change -> DNSEndpoint: one at a time p50 %s p99 %s; %d at once p50 %s p99 %s (goal p99 <= 1 s)\n",
		p(one, 50), p(one, 99), k, p(all, 50), p(all, 99))
	b.ReportMetric(per(engaged.rss, base.rss)/(1<<20), "rss-MiB/cluster")
	b.ReportMetric(per(engaged.goroutines, base.goroutines), "goroutines/cluster")
	b.ReportMetric(published.Seconds(), "publish-s")
	b.ReportMetric(p(all, 99).Seconds(), "all-change-p99-s")
}

// controllerFigures are what scaleRun reads of the controller's metrics.
type controllerFigures struct {
	rss, heap, goroutines, userRequests, conflicts float64
}

func scrape(b *testing.B, c *framework.Controller, seedHost string) controllerFigures {
	m, err := c.Metrics()
	must(b, err)
	var f controllerFigures
	for _, line := range strings.Split(m, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 || strings.HasPrefix(line, "#") {
			continue
		}
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			continue
		}
		switch {
		case fields[0] == "process_resident_memory_bytes":
			f.rss = v
		case fields[0] == "go_memstats_heap_inuse_bytes":
			f.heap = v
		case fields[0] == "go_goroutines":
			f.goroutines = v
		case strings.HasPrefix(line, "rest_client_requests_total{"):
			// The seed is the only API server on the seed's port; every other host is a user cluster.
			if !strings.Contains(line, `host="`+strings.TrimPrefix(seedHost, "https://")+`"`) {
				f.userRequests += v
			} else if strings.Contains(line, `code="409"`) {
				f.conflicts += v
			}
		}
	}
	return f
}

// allChange sets n1 of clusters 0..k-1 ready or not at once and returns, per cluster, the time
// until its DNSEndpoint shows it (every DNSEndpoint listed every 5 ms).
func allChange(ctx context.Context, b *testing.B, seed *framework.ControlPlane, k int, set func(i int, ready bool) error, ready bool) []time.Duration {
	want := 2
	if ready {
		want = 3
	}
	t0 := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		parallel(b, k, func(i int) error { return set(i, ready) })
	}()
	seen := map[string]time.Duration{}
	deadline := time.Now().Add(2 * time.Minute)
	for len(seen) < k {
		var eps dnsrecords.DNSEndpointList
		must(b, seed.Client.List(ctx, &eps, client.InNamespace("default")))
		for _, ep := range eps.Items {
			var i int
			if _, err := fmt.Sscanf(ep.Name, "u%d", &i); err != nil || i >= k {
				continue
			}
			if _, ok := seen[ep.Name]; !ok && len(ep.Spec.Endpoints) > 0 && len(ep.Spec.Endpoints[0].Targets) == want {
				seen[ep.Name] = time.Since(t0)
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("after 2 min %d of %d DNSEndpoints show the change", len(seen), k)
		}
		time.Sleep(5 * time.Millisecond)
	}
	<-done
	out := make([]time.Duration, 0, len(seen))
	for _, d := range seen {
		out = append(out, d)
	}
	return out
}

// parallel runs f(0..n-1) on 32 workers and fails b with the first error.
func parallel(b *testing.B, n int, f func(i int) error) {
	work := make(chan int)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := range work {
				if err := f(i); err != nil {
					errs <- fmt.Errorf("%d: %w", i, err)
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Error(err)
	}
	if b.Failed() {
		b.FailNow()
	}
}

// setReady sets a node's Ready condition.
func setReady(ctx context.Context, u *framework.ControlPlane, name string, ready bool) error {
	n := &corev1.Node{}
	if err := u.Client.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
		return err
	}
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st, Reason: "Bench"}}
	return u.Client.Status().Update(ctx, n)
}

// waitAllTargets waits until DNSEndpoint u<i> has want(i) targets for every i < n.
func waitAllTargets(ctx context.Context, b *testing.B, seed *framework.ControlPlane, n int, want func(int) int) {
	deadline := time.Now().Add(10 * time.Minute)
	for {
		var eps dnsrecords.DNSEndpointList
		must(b, seed.Client.List(ctx, &eps, client.InNamespace("default")))
		done := 0
		for _, ep := range eps.Items {
			var i int
			if _, err := fmt.Sscanf(ep.Name, "u%d", &i); err == nil && i < n && len(ep.Spec.Endpoints) > 0 && len(ep.Spec.Endpoints[0].Targets) == want(i) {
				done++
			}
		}
		if done == n {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("after 10 min %d of %d clusters published", done, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
