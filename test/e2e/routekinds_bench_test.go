package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/test/framework"
)

// BenchmarkRouteKindsAllocation prints, for HTTPRoutes beside Ingresses (BenchmarkAllocation's
// figures are the Ingress-only ones; the goals are the same: all allocated <= 30 s, create ->
// allocated p99 <= 1 s):
//   - httproutes: 16 writers create 10,000 hostless HTTPRoutes at once in an engaged cluster
//     (the clock starts at the first create); then create -> allocated p50/p99 of 100 more;
//   - mixed: 5,000 Ingresses and 5,000 HTTPRoutes created at once (16 writers each) in another
//     cluster, planned together (one owner per host across both kinds); then create ->
//     allocated p50/p99 of 50 more of each kind, one after the other.
//
// Gateway API is on in the profile: Shardgate installs its CRDs into each cluster, and the
// clock starts once HTTPRoutes are served there. No router runs (NodePort shards, a node object):
// this measures allocation, not serving.
func BenchmarkRouteKindsAllocation(b *testing.B) {
	const total, namespaces, singles = 10000, 10, 100
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	for range b.N {
		env := framework.StartEnvironment(b, framework.EnvironmentOptions{UserClusters: 2})
		p := &v1alpha1.IngressProfile{ObjectMeta: metav1.ObjectMeta{Name: "bench"}, Spec: v1alpha1.IngressProfileSpec{
			GatewayAPI: v1alpha1.GatewayAPIEnabled,
			Shards: []v1alpha1.ShardSpec{{Name: "default", Publishing: v1alpha1.PublishNodePort},
				{Name: "a", Publishing: v1alpha1.PublishNodePort}, {Name: "b", Publishing: v1alpha1.PublishNodePort}},
		}}
		if err := env.Seed.Client.Create(ctx, p); err != nil {
			b.Fatal(err)
		}
		pprofAddr, pprof := pprofArgs(b)
		framework.StartController(b, env.Seed, append(pprof, "--dns-zone=bench.test", "--max-objects-per-kind=20000")...)
		fast := make([]client.Client, 2)
		for i, name := range []string{"httproutes", "mixed"} {
			u := env.Users[i]
			createReadyNode(ctx, b, u, "n1", fmt.Sprintf("127.0.%d.1", 62+i))
			fast[i] = fastClient(b, u)
			createNamespaces(ctx, b, fast[i], namespaces)
			registerKubeconfigSecret(ctx, b, env.Seed, "default", name, name, u, nil)
		}
		for i := range fast {
			waitPolicyInstalled(ctx, b, fast[i])
			waitHTTPRoutesServed(ctx, b, fast[i])
		}
		hostless := func(prefix string) func(int) client.Object {
			return func(i int) client.Object {
				return httpRoute(fmt.Sprintf("ns%d", i%namespaces), fmt.Sprintf("%s%d", prefix, i))
			}
		}

		// 10,000 HTTPRoutes at once, then one at a time.
		routes := watchAllocations(ctx, b, env.Users[0], &gatewayv1.HTTPRoute{})
		start, cpu0 := time.Now(), processCPU(b)
		createRoutes(ctx, b, fast[0], total, hostless("r"))
		created, cpuCreated := time.Since(start), processCPU(b)
		// Where the time after the last create goes (SHARDGATE_BENCH_PROFILE_DIR).
		profiled := profileCPU(ctx, b, "httproutes-allocating", env.Users[0], pprofAddr, 30*time.Second)
		routes.waitFor(b, total)
		bursted := time.Since(start)
		cpu := burstCPU(cpu0, cpuCreated, processCPU(b), created, bursted)
		profiled()
		lat := createOneByOne(ctx, b, fast[0], routes, total, singles, func(i int) client.Object {
			return httpRoute("ns0", fmt.Sprintf("single%d", i))
		})
		p50, p99 := percentiles(lat)

		// 5,000 + 5,000 at once, then one of each kind at a time.
		ings := watchAllocations(ctx, b, env.Users[1], &networkingv1.Ingress{})
		mixedRoutes := watchAllocations(ctx, b, env.Users[1], &gatewayv1.HTTPRoute{})
		start = time.Now()
		var wg sync.WaitGroup
		wg.Go(func() { createIngresses(ctx, b, fast[1], "i", total/2, namespaces) })
		wg.Go(func() { createRoutes(ctx, b, fast[1], total/2, hostless("r")) })
		wg.Wait()
		if b.Failed() {
			b.FailNow()
		}
		mixedCreated := time.Since(start)
		ings.waitFor(b, total/2)
		mixedRoutes.waitFor(b, total/2)
		mixed := time.Since(start)
		ingLat := createOneByOne(ctx, b, fast[1], ings, total/2, singles/2, func(i int) client.Object {
			return routeIngress("ns0", fmt.Sprintf("single%d", i), "")
		})
		routeLat := createOneByOne(ctx, b, fast[1], mixedRoutes, total/2, singles/2, func(i int) client.Object {
			return httpRoute("ns0", fmt.Sprintf("single%d", i))
		})
		ingP50, ingP99 := percentiles(ingLat)
		routeP50, routeP99 := percentiles(routeLat)

		b.ReportMetric(bursted.Seconds(), "10k-httproutes-burst-s")
		b.ReportMetric(p99.Seconds(), "httproute-create-to-allocated-p99-s")
		b.ReportMetric(mixed.Seconds(), "5k+5k-mixed-burst-s")
		b.ReportMetric(max(ingP99, routeP99).Seconds(), "mixed-create-to-allocated-p99-s")
		fmt.Printf("route kinds: 10k HTTPRoutes burst (created in %s) all allocated %s after the first create (target <= 30s);"+
			" then create -> allocated p50 %s p99 %s over %d (target p99 <= 1s)\n",
			created.Round(time.Millisecond), bursted.Round(time.Millisecond), p50.Round(time.Millisecond),
			p99.Round(time.Millisecond), singles)
		fmt.Printf("route kinds: 10k HTTPRoute burst CPU-seconds %s\n", cpu)
		fmt.Printf("route kinds: 5k Ingresses + 5k HTTPRoutes burst (created in %s) all allocated %s after the first create;"+
			" then create -> allocated Ingress p50 %s p99 %s, HTTPRoute p50 %s p99 %s over %d each\n",
			mixedCreated.Round(time.Millisecond), mixed.Round(time.Millisecond), ingP50.Round(time.Millisecond),
			ingP99.Round(time.Millisecond), routeP50.Round(time.Millisecond), routeP99.Round(time.Millisecond), singles/2)
	}
}

// waitHTTPRoutesServed waits until the cluster serves HTTPRoutes (Shardgate installs Gateway
// API's CRDs where they are absent).
func waitHTTPRoutesServed(ctx context.Context, b *testing.B, c client.Client) {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		err := c.List(ctx, &gatewayv1.HTTPRouteList{}, client.Limit(1))
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("HTTPRoutes not served after 5 minutes: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// createOneByOne creates n routes one at a time, each once the previous is allocated (w counts
// had before them), and returns each one's create -> allocated time.
func createOneByOne(ctx context.Context, b *testing.B, c client.Client, w *allocationWatch, had, n int,
	route func(i int) client.Object,
) []time.Duration {
	var lat []time.Duration
	for i := range n {
		t0 := time.Now()
		if err := c.Create(ctx, route(i)); err != nil {
			b.Fatal(err)
		}
		w.waitFor(b, had+i+1)
		lat = append(lat, time.Since(t0))
	}
	return lat
}

// percentiles are the p50 and p99 of lat.
func percentiles(lat []time.Duration) (time.Duration, time.Duration) {
	slices.Sort(lat)
	return lat[len(lat)/2], lat[(len(lat)*99+99)/100-1]
}
