package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/test/framework"
)

// OpenShift's router (HAProxy) as its docs publish it: 21.5k req/s behind a load balancer on
// 4 vCPU, plaintext keep-alive: the per-vCPU anchor printed beside the figures here.
const openShiftReqPerVCPU = 21500.0 / 4

// BenchmarkFlavours prints, for each router flavour in one user cluster (a shard each, one
// router on a real node of its own, the same backend pod on a third node, the same Go client in
// the fabric's client namespace, run one flavour after the other):
//   - the data path: req/s, p50 and p99 over 32 keep-alive connections for 10 s, plaintext and
//     TLS, the better of two rounds that alternate the flavours, and HAProxy's as a ratio of
//     Traefik's;
//   - route live: Ingress created → first 200 through the shard, p50 and p99 of 10, at 100 and
//     at 1,000 existing routes of the shard;
//   - reload cost: the router container's CPU (its cgroup's, reloaded processes included) per
//     1,000 route changes (a path edited), until the last one is served.
//
// Everything shares the machine's cores with the client, the backend, kubelets and API servers:
// read the ratios, not the absolute figures.
func BenchmarkFlavours(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	flavours := render.Flavours()
	// Short node names: the kubelets' socket paths under the run directory must stay within 108 bytes.
	var nodes []framework.RealNodeSpec
	for i, f := range flavours {
		nodes = append(nodes, framework.RealNodeSpec{Name: fmt.Sprintf("f%d", i+1), Labels: map[string]string{"role": string(f.Name())}})
	}
	nodes = append(nodes, framework.RealNodeSpec{Name: "be", Labels: map[string]string{"role": "backend"}})
	for range b.N {
		env := framework.StartEnvironment(b, framework.EnvironmentOptions{UserClusters: 1, DNS: true,
			RealNodes: [][]framework.RealNodeSpec{nodes}})
		pebble := framework.StartPebble(b, env.DNS, framework.PebbleOptions{})
		cm := framework.StartCertManager(b, env.Seed, env.DNS)
		must(b, env.Seed.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shardgate"}}))
		must(b, cm.CreateACMEIssuer(ctx, env.Seed, pebble, env.DNS, framework.ACMEIssuer{Name: "pebble",
			Namespace: "shardgate", SkipSelfCheck: true}))
		roots, err := pebble.Roots(ctx)
		must(b, err)
		framework.StartController(b, env.Seed, "--dns-zone="+env.DNS.Zone, "--certificate-namespace=shardgate")
		u, fabric := env.Users[0], env.Fabrics[0]
		domain := "bench." + env.DNS.Zone
		shards := shardPerFlavour()
		sel := map[string]string{"bench": "flavours"}
		must(b, env.Seed.Client.Create(ctx, &v1alpha1.IngressProfile{ObjectMeta: metav1.ObjectMeta{Name: "flavours"},
			Spec: v1alpha1.IngressProfileSpec{ClusterSelector: metav1.LabelSelector{MatchLabels: sel},
				DNS: v1alpha1.DNSSettings{TTL: 5}, Shards: shards,
				TLS: v1alpha1.TLSSettings{IssuerRef: &v1alpha1.IssuerReference{Name: "pebble", Kind: v1alpha1.KindIssuer}}}}))
		// The backend on a node of its own: both flavours' routers reach it across the fabric alike.
		must(b, framework.DeployBackend(ctx, u, "default", "web", 1))
		update(ctx, b, u.Client, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}},
			func(d *appsv1.Deployment) { d.Spec.Template.Spec.NodeSelector = map[string]string{"role": "backend"} })
		eventually(ctx, b, 3*time.Minute, func() (bool, string) {
			pods := &corev1.PodList{}
			must(b, u.Client.List(ctx, pods, client.InNamespace("default"), client.MatchingLabels{"app": "web"}))
			return len(pods.Items) == 1 && pods.Items[0].Spec.NodeName == "be" && podReady(&pods.Items[0]),
				fmt.Sprintf("%d backend pods, want one ready on node backend", len(pods.Items))
		})
		registerKubeconfigSecret(ctx, b, env.Seed, "default", "bench", "bench", u, sel)

		// The data path first, for every flavour before any route is added, in alternating rounds
		// (the machine's noise drifts): each figure is the better of its two rounds.
		type target struct{ node, host string }
		targets := map[v1alpha1.Flavour]target{}
		for i, f := range flavours {
			t := target{node: env.Nodes[0][i].IP, host: "app." + names.ShardDomain(shards[i].Name, domain)}
			targets[f.Name()] = t
			must(b, u.Client.Create(ctx, benchIngress("web-"+shards[i].Name, t.host, f.IngressClass().Name, "/")))
			eventually(ctx, b, 5*time.Minute, func() (bool, string) {
				code, _, _, err := fabric.GetTLS(ctx, t.node+":443", t.host, roots)
				return err == nil && code == 200, fmt.Sprintf("https://%s via %s: %d %v", t.host, t.node, code, err)
			})
		}
		best := map[string]load{}
		for round := range 2 {
			for _, f := range flavours {
				for _, mode := range []string{"http", "https"} {
					progress("%s %s: load, round %d", f.Name(), mode, round+1)
					t := targets[f.Name()]
					r := loadFor(ctx, fabric, mode, t.node, t.host, roots, 32, 10*time.Second)
					key := string(f.Name()) + "-" + mode
					b.Logf("%s %s round %d: %.0f req/s (%d requests, %d failed), p50 %s, p99 %s", f.Name(), mode, round+1,
						r.rps, r.n, r.failed, r.p50, r.p99)
					if r.rps > best[key].rps {
						best[key] = r
					}
				}
			}
		}
		rps := map[string]float64{}
		for key, r := range best {
			rps[key] = r.rps
			b.ReportMetric(r.rps, key+"-req/s")
			b.ReportMetric(float64(r.p50.Microseconds())/1000, key+"-p50-ms")
			b.ReportMetric(float64(r.p99.Microseconds())/1000, key+"-p99-ms")
		}
		for i, f := range flavours {
			s, t := shards[i], targets[f.Name()]
			shardDomain, class := names.ShardDomain(s.Name, domain), f.IngressClass().Name
			for _, existing := range []int{100, 1000} {
				progress("%s: filling the shard with %d routes", f.Name(), existing)
				fillRoutes(ctx, b, u, s.Name, shardDomain, class, existing)
				progress("%s: measuring route live at %d routes", f.Name(), existing)
				p50, p99 := routeLive(ctx, b, u, fabric, t.node, s.Name, shardDomain, class, roots, existing)
				b.ReportMetric(p50.Seconds(), fmt.Sprintf("%s-route-live-at-%d-p50-s", f.Name(), existing))
				b.ReportMetric(p99.Seconds(), fmt.Sprintf("%s-route-live-at-%d-p99-s", f.Name(), existing))
				b.Logf("%s route live at %d routes: p50 %s, p99 %s", f.Name(), existing, p50, p99)
			}
			progress("%s: changing 1,000 routes", f.Name())
			cpu := reloadCost(ctx, b, u, fabric, t.node, s.Name, shardDomain, f, roots, 1000)
			b.ReportMetric(cpu.Seconds(), string(f.Name())+"-cpu-s-per-1000-route-changes")
			b.Logf("%s: %s CPU per 1,000 route changes", f.Name(), cpu)
		}
		for _, mode := range []string{"http", "https"} {
			if t := rps["traefik-"+mode]; t > 0 {
				ratio := rps["haproxy-"+mode] / t
				b.ReportMetric(ratio, "haproxy/traefik-"+mode+"-req/s")
				b.Logf("%s: HAProxy %.2f× Traefik; per core of this 2-core machine (everything on it shares them) "+
					"HAProxy %.0f req/s, Traefik %.0f, OpenShift's published HAProxy %.0f per vCPU", mode, ratio,
					rps["haproxy-"+mode]/2, t/2, openShiftReqPerVCPU)
			}
		}
	}
}

// progress tells where a long bench is, on stderr as it goes (b.Log prints only at the end).
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// benchIngress is an Ingress of class for host and path to Service web.
func benchIngress(name, host, class, path string) *networkingv1.Ingress {
	ing := shardIngress(name, host)
	ing.Spec.IngressClassName = ptr.To(class)
	ing.Spec.Rules[0].HTTP.Paths[0].Path = path
	return ing
}

// load is one load run's figures.
type load struct {
	n, failed int
	rps       float64
	p50, p99  time.Duration
}

// loadFor sends GET / for host to addr's port 80 (http) or 443 (https) from conns keep-alive
// connections for d, and measures.
func loadFor(ctx context.Context, f *framework.Fabric, mode, node, host string, roots *x509.CertPool, conns int,
	d time.Duration,
) load {
	var cfg *tls.Config
	port := "80"
	if mode == "https" {
		cfg, port = &tls.Config{RootCAs: roots, ServerName: host, MinVersion: tls.VersionTLS12}, "443"
	}
	c := f.HTTPClient(cfg, conns)
	url := mode + "://" + node + ":" + port + "/"
	var mu sync.Mutex
	var lat []time.Duration
	failed := 0
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() {
			var mine []time.Duration
			bad := 0
			for time.Now().Before(end) && ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
				req.Host = host
				start := time.Now()
				resp, err := c.Do(req)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				if err != nil || resp.StatusCode != 200 {
					bad++
					continue
				}
				mine = append(mine, time.Since(start))
			}
			mu.Lock()
			lat, failed = append(lat, mine...), failed+bad
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.Sort(lat)
	r := load{n: len(lat) + failed, failed: failed, rps: float64(len(lat)) / d.Seconds()}
	if len(lat) > 0 {
		r.p50, r.p99 = lat[len(lat)/2], lat[len(lat)*99/100]
	}
	return r
}

// fillRoutes makes the shard hold n filler Ingresses (fill-<shard>-<i>, allocated and served).
func fillRoutes(ctx context.Context, b *testing.B, u *framework.ControlPlane, shard, shardDomain, class string, n int) {
	for i := range n {
		ing := benchIngress(fmt.Sprintf("fill-%s-%d", shard, i), fmt.Sprintf("fill%d.%s", i, shardDomain), class, "/")
		if err := u.Client.Create(ctx, ing); err != nil && !strings.Contains(err.Error(), "already exists") {
			b.Fatal(err)
		}
	}
	eventually(ctx, b, 10*time.Minute, func() (bool, string) {
		list := &networkingv1.IngressList{}
		if err := u.Client.List(ctx, list, client.InNamespace("default")); err != nil {
			return false, err.Error()
		}
		// Allocated, and picked up by the shard's routers (they publish its address): measure at
		// rest, not while the routers still work through the filling.
		allocated, published := 0, 0
		for _, ing := range list.Items {
			if strings.HasPrefix(ing.Name, "fill-"+shard+"-") && ing.Labels[v1alpha1.ShardLabel] == shard {
				allocated++
				if len(ing.Status.LoadBalancer.Ingress) > 0 {
					published++
				}
			}
		}
		return published >= n, fmt.Sprintf("%d of %d filler routes of shard %s allocated, %d published by its routers",
			allocated, n, shard, published)
	})
}

// routeLive creates 10 Ingresses one after the other and measures each from its creation to its
// first 200 through the shard's router; p50 and p99 (the slowest of 10).
func routeLive(ctx context.Context, b *testing.B, u *framework.ControlPlane, f *framework.Fabric, node, shard,
	shardDomain, class string, roots *x509.CertPool, existing int,
) (time.Duration, time.Duration) {
	var took []time.Duration
	for i := range 10 {
		host := fmt.Sprintf("live%d-%d.%s", existing, i, shardDomain)
		start := time.Now()
		name := fmt.Sprintf("live-%s-%d-%d", shard, existing, i)
		must(b, u.Client.Create(ctx, benchIngress(name, host, class, "/")))
		eventually(ctx, b, 2*time.Minute, func() (bool, string) {
			code, _, _, err := f.GetTLS(ctx, node+":443", host, roots)
			if err == nil && code == 200 {
				return true, ""
			}
			ing := &networkingv1.Ingress{}
			_ = u.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, ing)
			return false, fmt.Sprintf("https://%s: %d %v; allocation %q, address %+v", host, code, err,
				ing.Annotations[v1alpha1.AllocationAnnotation], ing.Status.LoadBalancer.Ingress)
		})
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	return took[len(took)/2], took[len(took)-1]
}

// reloadCost edits the path of n filler Ingresses of the shard, waits until the last edit is
// served, and returns the router container's CPU time meanwhile.
func reloadCost(ctx context.Context, b *testing.B, u *framework.ControlPlane, fabric *framework.Fabric, node, shard,
	shardDomain string, fl render.Flavour, roots *x509.CertPool, n int,
) time.Duration {
	id := routerContainerID(ctx, b, u, fl, shard)
	before, err := framework.ContainerCPU(id)
	must(b, err)
	for i := range n {
		ing := &networkingv1.Ingress{}
		must(b, u.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: fmt.Sprintf("fill-%s-%d", shard, i)}, ing))
		ing.Spec.Rules[0].HTTP.Paths[0].Path = "/v2"
		must(b, u.Client.Update(ctx, ing))
	}
	last := fmt.Sprintf("fill%d.%s", n-1, shardDomain)
	eventually(ctx, b, 5*time.Minute, func() (bool, string) {
		code, _, _, err := fabric.GetTLS(ctx, node+":443", last, roots)
		return err == nil && code == 404, fmt.Sprintf("https://%s/ after its path moved to /v2: %d %v", last, code, err)
	})
	after, err := framework.ContainerCPU(id)
	must(b, err)
	return after - before
}

// routerContainerID is the runtime ID of the shard's one router container.
func routerContainerID(ctx context.Context, b *testing.B, u *framework.ControlPlane, fl render.Flavour, shard string) string {
	container := fl.Router(render.RouterInput{Shard: v1alpha1.ShardSpec{Name: shard}}).Container.Name
	pods := &corev1.PodList{}
	must(b, u.Client.List(ctx, pods, client.InNamespace(names.Namespace), client.MatchingLabels{v1alpha1.ShardLabel: shard}))
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == container && cs.State.Running != nil {
				return strings.TrimPrefix(cs.ContainerID, "containerd://")
			}
		}
	}
	b.Fatalf("no running router container of shard %s", shard)
	return ""
}
