package e2e

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/test/framework"
)

// BenchmarkAllocation prints how long 10,000 Ingresses in one user cluster take to be allocated
// (target <= 30 s), in the two ways a cluster gets that many:
//   - adopted: the cluster already has them when it is registered with Shardgate (the clock
//     starts when its kubeconfig Secret is created: engagement, cache sync and admission policy
//     install are inside the figure);
//   - burst: 16 writers create them at once in an engaged cluster (the clock starts at the first
//     create, so the creation itself is inside the figure).
//
// Then the p50/p99 from creating one Ingress to it being allocated in a cluster that already
// has 10,000 (target p99 <= 1 s). "Allocated" means the Ingress carries its shard label and the
// Allocated annotation (its address is the routers' to publish, and no router runs here); it
// also checks that every decision produced exactly one Event.
//
// Progress is read from a watch (an informer), not by listing: listing 10,000 Ingresses every
// few hundred milliseconds would cost the API server more than the controller under test.
func BenchmarkAllocation(b *testing.B) {
	const total, namespaces, singles = 10000, 10, 100
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	for range b.N {
		env := framework.StartEnvironment(b, framework.EnvironmentOptions{UserClusters: 2})
		// LeastUtilized: every pass reads the shards' load reports (none here, no router runs: the
		// load is unknown and LeastLoaded decides, as it says); BenchmarkStrategies10k compares
		// the strategies' own cost with every load known.
		p := &v1alpha1.IngressProfile{ObjectMeta: metav1.ObjectMeta{Name: "bench"}, Spec: v1alpha1.IngressProfileSpec{
			Shards:     []v1alpha1.ShardSpec{{Name: "default", Publishing: v1alpha1.PublishNodePort}, {Name: "a", Publishing: v1alpha1.PublishNodePort}, {Name: "b", Publishing: v1alpha1.PublishNodePort}},
			Allocation: v1alpha1.AllocationSettings{Strategy: v1alpha1.StrategyLeastUtilized},
		}}
		if err := env.Seed.Client.Create(ctx, p); err != nil {
			b.Fatal(err)
		}
		// 10,000 Ingresses and the singles after them pass the default object budget (10,000 per kind,
		// which freezes a cluster that grows past it): this measures allocation, not the budget.
		framework.StartController(b, env.Seed, "--dns-zone=bench.test", "--max-objects-per-kind=20000")

		// Adopted: 10,000 Ingresses exist before the cluster is registered.
		adopt := env.Users[0]
		createReadyNode(ctx, b, adopt, "n1", "127.0.60.1")
		adoptFast := fastClient(b, adopt)
		createNamespaces(ctx, b, adoptFast, namespaces)
		createIngresses(ctx, b, adoptFast, "r", total, namespaces)
		adoptWatch := watchAllocations(ctx, b, adopt, &networkingv1.Ingress{})
		start := time.Now()
		registerKubeconfigSecret(ctx, b, env.Seed, "default", "adopt", "adopt", adopt, nil)
		adoptWatch.waitFor(b, total)
		adopted := time.Since(start)
		adoptFirst := adoptWatch.firstAfter(start)
		adoptWatch.waitForEvents(b, total)
		adoptedEvents := time.Since(start)

		// Burst: 10,000 Ingresses created at once in an engaged cluster.
		burst := env.Users[1]
		createReadyNode(ctx, b, burst, "n1", "127.0.61.1")
		burstFast := fastClient(b, burst)
		createNamespaces(ctx, b, burstFast, namespaces)
		burstWatch := watchAllocations(ctx, b, burst, &networkingv1.Ingress{})
		registerKubeconfigSecret(ctx, b, env.Seed, "default", "burst", "burst", burst, nil)
		waitPolicyInstalled(ctx, b, burstFast)
		start, cpu0 := time.Now(), processCPU(b)
		createIngresses(ctx, b, burstFast, "r", total, namespaces)
		created, cpuCreated := time.Since(start), processCPU(b)
		burstWatch.waitFor(b, total)
		bursted := time.Since(start)
		cpu := burstCPU(cpu0, cpuCreated, processCPU(b), created, bursted)

		lat := createOneByOne(ctx, b, burstFast, burstWatch, total, singles, func(i int) client.Object {
			return routeIngress("ns0", fmt.Sprintf("single%d", i), "")
		})
		p50, p99 := percentiles(lat)

		for _, c := range []struct {
			name string
			cl   client.Client
			want int
		}{{"adopted", adoptFast, total}, {"burst", burstFast, total + singles}} {
			// A pass creates its Events after its writes (allocation's writePass): they may trail.
			var events map[string]int
			n := 0
			for deadline := time.Now().Add(time.Minute); n < c.want && time.Now().Before(deadline); {
				time.Sleep(time.Second)
				events, n = ingressEvents(ctx, b, c.cl, v1alpha1.AllocationAllocated), 0
				for _, per := range events {
					n += per
				}
			}
			if n != c.want || len(events) != c.want {
				b.Errorf("%s cluster: %d Allocated events on %d Ingresses for %d decisions (want exactly one each)", c.name, n, len(events), c.want)
			}
		}
		b.ReportMetric(adopted.Seconds(), "10k-adopted-s")
		b.ReportMetric(bursted.Seconds(), "10k-burst-s")
		b.ReportMetric(p50.Seconds(), "create-to-allocated-p50-s")
		b.ReportMetric(p99.Seconds(), "create-to-allocated-p99-s")
		b.ReportMetric(adoptedEvents.Seconds(), "10k-adopted-events-s")
		fmt.Printf("allocation: 10k adopted (registered with %d Ingresses): first allocated after %s, all after %s (their Events all created after %s); 10k burst (created in %s) all allocated %s after the first create, %s after the last (target <= 30s); then create -> allocated p50 %s p99 %s over %d (target p99 <= 1s)\n",
			total, adoptFirst.Round(time.Millisecond), adopted.Round(time.Millisecond), adoptedEvents.Round(time.Millisecond), created.Round(time.Millisecond), bursted.Round(time.Millisecond), (bursted - created).Round(time.Millisecond),
			p50.Round(time.Millisecond), p99.Round(time.Millisecond), singles)
		fmt.Printf("allocation: 10k Ingress burst CPU-seconds %s\n", cpu)
	}
}

// burstCPU says where the CPU went while a burst of routes was created (cpu0 to cpuCreated, over
// created) and then allocated (to cpuDone, bursted after the first create): which process a
// burst's time is spent in, the user cluster's API server and etcd or the seed's controller.
func burstCPU(cpu0, cpuCreated, cpuDone cpuSample, created, bursted time.Duration) string {
	return fmt.Sprintf("while created: %s; after, until all allocated: %s", cpuSpent(cpu0, cpuCreated, created),
		cpuSpent(cpuCreated, cpuDone, bursted-created))
}

// fastClient is a client for bulk writes (client-go's default 5 QPS would measure itself).
func fastClient(b *testing.B, cp *framework.ControlPlane) client.Client {
	cfg := rest.CopyConfig(cp.Config)
	cfg.QPS, cfg.Burst = 2000, 4000
	c, err := client.New(cfg, client.Options{Scheme: framework.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func createNamespaces(ctx context.Context, b *testing.B, c client.Client, n int) {
	for i := range n {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ns%d", i)}}); err != nil {
			b.Fatal(err)
		}
	}
}

// createIngresses creates total Ingresses spread over the namespaces with 16 writers.
func createIngresses(ctx context.Context, b *testing.B, c client.Client, prefix string, total, namespaces int) {
	createRoutes(ctx, b, c, total, func(i int) client.Object {
		return routeIngress(fmt.Sprintf("ns%d", i%namespaces), fmt.Sprintf("%s%d", prefix, i), "")
	})
}

// createRoutes creates route(i) for i below total with 16 writers.
func createRoutes(ctx context.Context, b *testing.B, c client.Client, total int, route func(i int) client.Object) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(total) {
					return
				}
				if err := c.Create(ctx, route(int(i))); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
}

// waitPolicyInstalled waits until the cluster is engaged and its user ConfigMap written, so that
// a clock started after it measures allocation, not start-up.
func waitPolicyInstalled(ctx context.Context, b *testing.B, c client.Client) {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		if err := c.Get(ctx, client.ObjectKey{Namespace: "kube-public", Name: "shardgate-ingress"}, &corev1.ConfigMap{}); err == nil {
			return
		}
		if time.Now().After(deadline) {
			b.Fatal("cluster not engaged after 5 minutes")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// allocationWatch counts, from informers' events, the allocated routes of one kind and their
// Allocated Events (which a pass creates after its writes).
type allocationWatch struct {
	mu     sync.Mutex
	told   map[string]bool
	first  time.Time // when the first Ingress was seen allocated
	n      atomic.Int64
	events atomic.Int64
}

func watchAllocations(ctx context.Context, b *testing.B, u *framework.ControlPlane, kind client.Object) *allocationWatch {
	ca, err := cache.New(u.Config, cache.Options{Scheme: framework.Scheme(), DefaultTransform: cache.TransformStripManagedFields()})
	if err != nil {
		b.Fatal(err)
	}
	gvk, err := u.Client.GroupVersionKindFor(kind)
	if err != nil {
		b.Fatal(err)
	}
	inf, err := ca.GetInformer(ctx, kind)
	if err != nil {
		b.Fatal(err)
	}
	w := &allocationWatch{told: map[string]bool{}}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { w.observe(o) },
		UpdateFunc: func(_, o any) { w.observe(o) },
	}); err != nil {
		b.Fatal(err)
	}
	evInf, err := ca.GetInformer(ctx, &corev1.Event{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := evInf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(o any) {
		if e, ok := o.(*corev1.Event); ok && e.Reason == v1alpha1.AllocationAllocated && e.InvolvedObject.Kind == gvk.Kind {
			w.events.Add(1)
		}
	}}); err != nil {
		b.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	b.Cleanup(cancel)
	go func() { _ = ca.Start(cctx) }()
	if !ca.WaitForCacheSync(cctx) {
		b.Fatal("bench watch did not sync")
	}
	return w
}

func (w *allocationWatch) observe(o any) {
	route, ok := o.(client.Object)
	if !ok {
		return
	}
	told := route.GetAnnotations()[v1alpha1.AllocationAnnotation] == v1alpha1.AllocationAllocated &&
		route.GetLabels()[v1alpha1.ShardLabel] != ""
	key := route.GetNamespace() + "/" + route.GetName()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.told[key] != told {
		w.told[key] = told
		if told {
			if w.first.IsZero() {
				w.first = time.Now()
			}
			w.n.Add(1)
		} else {
			w.n.Add(-1)
		}
	}
}

// firstAfter is how long after start the first Ingress was seen allocated.
func (w *allocationWatch) firstAfter(start time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.first.Sub(start)
}

// waitForEvents waits until at least want Allocated Events were created.
func (w *allocationWatch) waitForEvents(b *testing.B, want int) {
	waitCount(b, &w.events, want, "Allocated Events")
}

// waitFor waits until at least want routes are allocated.
func (w *allocationWatch) waitFor(b *testing.B, want int) {
	waitCount(b, &w.n, want, "routes allocated")
}

// waitCount waits (10 minutes at most) until n reaches want.
func waitCount(b *testing.B, n *atomic.Int64, want int, what string) {
	deadline := time.Now().Add(10 * time.Minute)
	for n.Load() < int64(want) {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d %s after 10 minutes", n.Load(), want, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
