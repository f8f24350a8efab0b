package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
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
// Where publication's time goes: a timeline of the clusters' creation and publication (audit
// log), the controllers' reconciles and queue waits, CPU-seconds by process; optional CPU
// profiles of the controller (SHARDGATE_SCALE_CPUPROFILE=file), of one user API server
// (SHARDGATE_SCALE_BACKEND_CPUPROFILE=file), of the seed's (SHARDGATE_SCALE_SEED_CPUPROFILE=file)
// and of this process, the cluster muxes
// (SHARDGATE_SCALE_HARNESS_CPUPROFILE=file), and controller flags to try
// (SHARDGATE_SCALE_CONTROLLER_FLAGS).
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
	// 250 clusters per API server: 125 (8 API servers) took 87 s instead of ~62 s to publish,
	// the extra API servers and etcds costing more CPU than their smaller watch fan-out saves.
	const perBackend = 250
	// The seed's audit log says which writes each cluster took until its DNSEndpoint existed.
	dir := framework.TestDir(b)
	policy, auditLog := filepath.Join(dir, "audit-policy.yaml"), filepath.Join(dir, "audit.log")
	must(b, os.WriteFile(policy, []byte(auditPolicy), 0o644))
	env := framework.StartEnvironment(b, framework.EnvironmentOptions{UserClusters: (n + perBackend - 1) / perBackend,
		SeedAPIServerFlags: map[string]string{"audit-policy-file": policy, "audit-log-path": auditLog, "audit-log-format": "json"}})
	seed := env.Seed
	var muxes []*framework.ClusterMux
	for _, u := range env.Users {
		muxes = append(muxes, framework.StartClusterMux(b, u))
	}
	mux := func(i int) *framework.ClusterMux { return muxes[i/perBackend] }
	userHosts := map[string]bool{}
	for _, m := range muxes {
		userHosts[m.Addr()] = true
	}
	id := func(i int) string { return fmt.Sprintf("u%d", i) }
	createProfileB(ctx, b, seed)
	flags := []string{"--dns-zone=bench.test"}
	// SHARDGATE_SCALE_CONTROLLER_FLAGS: more flags for the controller, e.g. "--dns-concurrency=16".
	flags = append(flags, strings.Fields(os.Getenv("SHARDGATE_SCALE_CONTROLLER_FLAGS"))...)

	// The controller's own cost with no cluster, on the same seed.
	idle := framework.StartController(b, seed, flags...)
	time.Sleep(15 * time.Second)
	base := scrape(b, idle, userHosts)
	must(b, idle.Kill())

	createBenchClusters(ctx, b, seed, n, mux)
	fmt.Printf("seed scale: %d user clusters on %d API servers set up in %s\n", n, len(env.Users), time.Since(start).Round(time.Second))
	for i := range dead {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		must(b, err)
		addr := l.Addr().String()
		userHosts[addr] = true
		must(b, l.Close())
		kc, err := framework.KubeconfigFor("https://"+addr, nil, "token")
		must(b, err)
		must(b, seed.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("dead%d", i),
			Labels: map[string]string{v1alpha1.KubeconfigSecretLabel: "true"}}, Data: map[string][]byte{"value": kc}}))
	}

	writes0 := seedWrites(ctx, b, seed)
	cpu0 := processCPU(b)
	pprofPort, err := framework.FreePort()
	must(b, err)
	started := time.Now()
	ctl := framework.StartController(b, seed, append(flags, fmt.Sprintf("--pprof-bind-address=127.0.0.1:%d", pprofPort))...)
	profiled := cpuProfile(b, pprofPort, os.Getenv("SHARDGATE_SCALE_CPUPROFILE"))
	backendProfiled := apiServerProfile(b, env.Users[0], os.Getenv("SHARDGATE_SCALE_BACKEND_CPUPROFILE"))
	harnessProfiled := harnessProfile(b, os.Getenv("SHARDGATE_SCALE_HARNESS_CPUPROFILE"))
	seedProfiled := apiServerProfile(b, seed, os.Getenv("SHARDGATE_SCALE_SEED_CPUPROFILE"))
	waitAllTargets(ctx, b, seed, n, func(int) int { return 3 })
	published := time.Since(started)
	cpuPublish := cpuSpent(cpu0, processCPU(b), published)
	writesToPublish := seedWrites(ctx, b, seed) - writes0
	byResource := seedWritesByResource(ctx, b, seed)
	atPublish := scrape(b, ctl, userHosts)
	<-profiled
	<-backendProfiled
	<-harnessProfiled
	<-seedProfiled
	// The DNSEndpoints come first; the routers' objects in every cluster and their status follow.
	// Settled: 10 s without a write to either side.
	settled := settle(ctx, b, ctl, seed, userHosts)
	settledAfter := time.Since(started)
	writesToSettle := seedWrites(ctx, b, seed) - writes0
	audit := auditByCluster(b, auditLog)
	toPublish, inAll := writesPerCluster(audit)
	engaged := scrape(b, ctl, userHosts)

	// Steady state: nothing changes for 60 s.
	seedBefore := seedWritesByResource(ctx, b, seed)
	time.Sleep(60 * time.Second)
	steady := scrape(b, ctl, userHosts)
	var steadySeed int
	var steadyKinds []string
	for k, v := range seedWritesByResource(ctx, b, seed) {
		if d := v - seedBefore[k]; d > 0 {
			steadySeed += d
			steadyKinds = append(steadyKinds, fmt.Sprintf("%s %d", k, d))
		}
	}
	slices.Sort(steadyKinds)
	userRate := (steady.sum("user ", "") - engaged.sum("user ", "")) / 60

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
	// 100 and up to 250 clusters changing at once, out and back in.
	set := func(i int, ready bool) error { return mux(i).SetNodeReady(ctx, id(i), "n1", ready) }
	hundred := allChange(ctx, b, seed, min(n, 100), set, false)
	hundred = append(hundred, allChange(ctx, b, seed, min(n, 100), set, true)...)
	k := min(n, 250)
	beforeAll, cpuBeforeAll, beforeAllAt := scrape(b, ctl, userHosts), processCPU(b), time.Now()
	all := allChange(ctx, b, seed, k, set, false)
	all = append(all, allChange(ctx, b, seed, k, set, true)...)
	duringAll := scrape(b, ctl, userHosts).since(beforeAll)
	cpuAll := cpuSpent(cpuBeforeAll, processCPU(b), time.Since(beforeAllAt))

	p := func(d []time.Duration, q int) time.Duration {
		slices.Sort(d)
		return d[(len(d)*q+99)/100-1].Round(time.Millisecond)
	}
	per := func(after, before float64) float64 { return (after - before) / float64(n) }
	fmt.Printf("seed scale, %d engaged clusters (+%d unreachable) on one replica:\n", n, dead)
	fmt.Printf("  per engaged cluster: RSS %.2f MiB (goal <= 1.5), heap %.2f MiB, goroutines %.0f (goal <= 40)\n",
		per(engaged.rss, base.rss)/(1<<20), per(engaged.heap, base.heap)/(1<<20), per(engaged.goroutines, base.goroutines))
	fmt.Printf("  controller start -> all %d DNSEndpoints published: %s (goal <= 60 s at 1,000), using %.0f CPU-seconds of the controller\n",
		n, published.Round(100*time.Millisecond), atPublish.cpu)
	fmt.Printf("    user API requests until then, per cluster: %s\n", perCluster(atPublish, "user", n))
	fmt.Printf("    %s\n", timeline(audit, started))
	fmt.Printf("    reconciles until then (mean time, mean wait in the queue): %s\n", reconcileFigures(atPublish))
	fmt.Printf("    CPU-seconds until then, by process: %s\n", cpuPublish)
	fmt.Printf("  start -> every controller settled (routers' objects applied in every cluster, status written): %s; writes since publication: %s\n",
		settledAfter.Round(100*time.Millisecond), settled)
	fmt.Printf("  seed writes to publish: %.2f per cluster (goal <= 3), %.2f until settled; 409 conflicts from the seed: %.0f\n",
		float64(writesToPublish)/float64(n), float64(writesToSettle)/float64(n), engaged.sum("seed ", " 409"))
	fmt.Printf("  status to publish: %.2f writes per cluster for %.2f changed controller parts (a write per part: the "+
		"other way, each controller applying its own); until settled %.2f for %.2f\n", atPublish.statusWrites/float64(n),
		atPublish.partChanges/float64(n), engaged.statusWrites/float64(n), engaged.partChanges/float64(n))
	fmt.Printf("    per published cluster, from the seed's audit log: %s writes until its DNSEndpoint was created, %s until settled (%d clusters)\n",
		spread(toPublish), spread(inAll), len(toPublish))
	var kinds []string
	for k, v := range byResource {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, v))
	}
	slices.Sort(kinds)
	fmt.Printf("    by resource (whole run so far, idle controller included): %s\n", strings.Join(kinds, ", "))
	fmt.Printf("  steady state (60 s): seed writes %d (goal 0); user API requests %.3f/s per cluster (goal <= 0.1)\n", steadySeed, userRate/float64(n))
	fmt.Printf("    user requests in those 60 s: %s\n    seed requests: %s\n    seed writes: %s\n", delta(engaged, steady, "user"), delta(engaged, steady, "seed"),
		strings.Join(steadyKinds, ", "))
	last := scrape(b, ctl, userHosts)
	fmt.Printf("  goroutines per engaged cluster: %.1f when settled, %.1f after 60 s of steady state, %.1f now (after the node changes)\n",
		per(engaged.goroutines, base.goroutines), per(steady.goroutines, base.goroutines), per(last.goroutines, base.goroutines))
	fmt.Printf("  goroutines by where they wait (top 12, whole process):\n%s", goroutineTop(b, pprofPort, 12))
	fmt.Printf("  node change -> DNSEndpoint: one at a time p50 %s p99 %s; %d at once p50 %s p99 %s; %d at once p50 %s p99 %s (goal p99 <= 1 s)\n",
		p(one, 50), p(one, 99), min(n, 100), p(hundred, 50), p(hundred, 99), k, p(all, 50), p(all, 99))
	fmt.Printf("    while %d changed at once, out and back in: reconciles %s; seed requests %s; CPU-seconds by process: %s\n",
		k, reconcileFigures(duringAll), delta(controllerFigures{}, duringAll, "seed"), cpuAll)
	b.ReportMetric(per(engaged.rss, base.rss)/(1<<20), "rss-MiB/cluster")
	b.ReportMetric(per(engaged.goroutines, base.goroutines), "goroutines/cluster")
	b.ReportMetric(published.Seconds(), "publish-s")
	b.ReportMetric(p(all, 99).Seconds(), "all-change-p99-s")
}

// controllerFigures are what scaleRun reads of the controller's metrics.
type controllerFigures struct {
	rss, heap, goroutines, cpu float64
	// statusWrites and partChanges: the status writer's writes, and the posts that changed a
	// controller's part (what writing each controller's part on its own would cost).
	statusWrites, partChanges float64
	// requests counts the controller's requests by "user|seed method code".
	requests map[string]float64
	// reconciles: per controller, "total", "time" (seconds in Reconcile) and "queued" (seconds
	// its requests waited in the work queue), with "count" of those waits.
	reconciles map[string]map[string]float64
}

// sum adds the requests whose key starts with prefix and contains part.
func (f controllerFigures) sum(prefix, part string) float64 {
	t := 0.0
	for k, v := range f.requests {
		if strings.HasPrefix(k, prefix) && strings.Contains(k, part) {
			t += v
		}
	}
	return t
}

// since is f less the counters of before: what the controller did between the two scrapes.
func (f controllerFigures) since(before controllerFigures) controllerFigures {
	out := controllerFigures{cpu: f.cpu - before.cpu, requests: map[string]float64{}, reconciles: map[string]map[string]float64{}}
	for k, v := range f.requests {
		out.requests[k] = v - before.requests[k]
	}
	for name, m := range f.reconciles {
		out.reconciles[name] = map[string]float64{}
		for k, v := range m {
			out.reconciles[name][k] = v - before.reconciles[name][k]
		}
	}
	return out
}

// delta is "method code: count" of the requests to target ("user" or "seed") between two scrapes.
func delta(before, after controllerFigures, target string) string {
	var out []string
	for k, v := range after.requests {
		if d := v - before.requests[k]; strings.HasPrefix(k, target+" ") && d > 0 {
			out = append(out, fmt.Sprintf("%s %.0f", strings.TrimPrefix(k, target+" "), d))
		}
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// perCluster is "method code: count per cluster" of the requests to target ("user" or "seed") a
// controller made since its start, for n clusters.
func perCluster(f controllerFigures, target string, n int) string {
	var out []string
	for k, v := range f.requests {
		if strings.HasPrefix(k, target+" ") && v > 0 {
			out = append(out, fmt.Sprintf("%s %.2f", strings.TrimPrefix(k, target+" "), v/float64(n)))
		}
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// scrape reads the controller's metrics; userHosts are the user clusters' host:ports.
func scrape(b *testing.B, c *framework.Controller, userHosts map[string]bool) controllerFigures {
	m, err := c.Metrics()
	must(b, err)
	f := controllerFigures{requests: map[string]float64{}, reconciles: map[string]map[string]float64{}}
	reconciled := func(name, what string, v float64) {
		if f.reconciles[name] == nil {
			f.reconciles[name] = map[string]float64{}
		}
		f.reconciles[name][what] += v
	}
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
		case fields[0] == "process_cpu_seconds_total":
			f.cpu = v
		case fields[0] == "shardgate_status_writes_total":
			f.statusWrites = v
		case strings.HasPrefix(line, "shardgate_status_part_changes_total{"):
			f.partChanges += v
		case strings.HasPrefix(line, "controller_runtime_reconcile_total{"):
			reconciled(label(line, "controller"), "total", v)
		case strings.HasPrefix(line, "controller_runtime_reconcile_time_seconds_sum{"):
			reconciled(label(line, "controller"), "time", v)
		case strings.HasPrefix(line, "workqueue_queue_duration_seconds_sum{"):
			reconciled(label(line, "name"), "queued", v)
		case strings.HasPrefix(line, "workqueue_queue_duration_seconds_count{"):
			reconciled(label(line, "name"), "count", v)
		case strings.HasPrefix(line, "rest_client_requests_total{"):
			label := func(name string) string { return label(line, name) }
			target := "seed"
			if userHosts[label("host")] {
				target = "user"
			}
			f.requests[target+" "+label("method")+" "+label("code")] += v
		}
	}
	return f
}

// label is the value of a Prometheus label in a metrics line.
func label(line, name string) string {
	_, rest, _ := strings.Cut(line, name+`="`)
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// reconcileFigures says, per controller that reconciled, how many reconciles, their mean time
// and the mean time a request waited in its queue.
func reconcileFigures(f controllerFigures) string {
	var out []string
	for name, m := range f.reconciles {
		if m["total"] == 0 {
			continue
		}
		queued := 0.0
		if m["count"] > 0 {
			queued = m["queued"] / m["count"]
		}
		out = append(out, fmt.Sprintf("%s %.0f (%.0f ms, queued %.0f ms)", name, m["total"], 1000*m["time"]/m["total"], 1000*queued))
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// settle waits until neither the seed nor a user cluster got a write from the controller for
// 10 s, and says which writes came meanwhile.
func settle(ctx context.Context, b *testing.B, ctl *framework.Controller, seed *framework.ControlPlane, userHosts map[string]bool) string {
	first := scrape(b, ctl, userHosts)
	writes := func(f controllerFigures) float64 {
		return f.sum("user PATCH", "") + f.sum("user POST", "") + f.sum("user PUT", "") + f.sum("user DELETE", "") + float64(seedWrites(ctx, b, seed))
	}
	last, quietSince := writes(first), time.Now()
	deadline := time.Now().Add(10 * time.Minute)
	for time.Since(quietSince) < 10*time.Second {
		if time.Now().After(deadline) {
			b.Fatal("the controller kept writing for 10 min after publication")
		}
		time.Sleep(time.Second)
		if w := writes(scrape(b, ctl, userHosts)); w != last {
			last, quietSince = w, time.Now()
		}
	}
	return fmt.Sprintf("user %s", delta(first, scrape(b, ctl, userHosts), "user"))
}

// clusterAudit is what the seed's audit log says of one cluster's ClusterIngress and DNSEndpoint.
type clusterAudit struct {
	// before: successful writes up to and including the DNSEndpoint's creation; all: so far.
	before, all int
	// created and published: when its ClusterIngress and its DNSEndpoint were created.
	created, published time.Time
}

// auditByCluster reads the seed's audit log (auditPolicy): for every cluster, its successful
// writes to its ClusterIngress (status included) and DNSEndpoint up to and including the
// DNSEndpoint's creation and all of them so far, and when both objects were created.
func auditByCluster(b *testing.B, path string) map[string]*clusterAudit {
	f, err := os.Open(path)
	must(b, err)
	defer f.Close()
	per := map[string]*clusterAudit{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e auditEvent
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.ResponseStatus.Code >= 300 ||
			(e.ObjectRef.Resource != "clusteringresses" && e.ObjectRef.Resource != "dnsendpoints") {
			continue
		}
		k := e.ObjectRef.Namespace + "/" + e.ObjectRef.Name
		c := per[k]
		if c == nil {
			c = &clusterAudit{}
			per[k] = c
		}
		c.all++
		if c.published.IsZero() {
			c.before++
		}
		switch {
		case e.Verb != "create":
		case e.ObjectRef.Resource == "dnsendpoints":
			c.published = e.StageTimestamp
		default:
			c.created = e.StageTimestamp
		}
	}
	must(b, sc.Err())
	return per
}

// writesPerCluster: of every published cluster, the writes until its DNSEndpoint was created and
// so far.
func writesPerCluster(per map[string]*clusterAudit) (toPublish, inAll []int) {
	for _, c := range per {
		if !c.published.IsZero() {
			toPublish, inAll = append(toPublish, c.before), append(inAll, c.all)
		}
	}
	return toPublish, inAll
}

// timeline says when, after start, the clusters' ClusterIngresses and DNSEndpoints were created
// and how long each cluster took from one to the other (p10, p50, p90, max): whether publication
// waits on the clusters being created or on reaching them.
func timeline(per map[string]*clusterAudit, start time.Time) string {
	var created, published, between []time.Duration
	for _, c := range per {
		if c.created.IsZero() || c.published.IsZero() {
			continue
		}
		created = append(created, c.created.Sub(start))
		published = append(published, c.published.Sub(start))
		between = append(between, c.published.Sub(c.created))
	}
	q := func(d []time.Duration) string {
		if len(d) == 0 {
			return "none"
		}
		slices.Sort(d)
		at := func(p int) time.Duration { return d[(len(d)-1)*p/100].Round(100 * time.Millisecond) }
		return fmt.Sprintf("%s / %s / %s / %s", at(10), at(50), at(90), at(100))
	}
	return fmt.Sprintf("ClusterIngress created %s; DNSEndpoint created %s; from one to the other %s (p10 / p50 / p90 / max, %d clusters)",
		q(created), q(published), q(between), len(between))
}

// spread is "mean (p50 x, max y)" of counts.
func spread(v []int) string {
	if len(v) == 0 {
		return "none"
	}
	slices.Sort(v)
	sum := 0
	for _, x := range v {
		sum += x
	}
	return fmt.Sprintf("%.2f (p50 %d, max %d)", float64(sum)/float64(len(v)), v[len(v)/2], v[len(v)-1])
}

// cpuProfile writes a 60 s CPU profile of the controller to path, from now (path "": none); the
// channel closes when it is written. For where publication spends its time:
// SHARDGATE_SCALE_CPUPROFILE=/tmp/publish.pprof, then go tool pprof -top bin/… /tmp/publish.pprof.
func cpuProfile(b *testing.B, port int, path string) <-chan struct{} {
	return profileTo(b, path, func() ([]byte, error) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/profile?seconds=60", port))
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		return io.ReadAll(resp.Body)
	})
}

// apiServerProfile writes a 60 s CPU profile of the API server cp (a user API server serves a
// quarter of the clusters) to path, from now (path "": none); the channel closes when it is written.
func apiServerProfile(b *testing.B, cp *framework.ControlPlane, path string) <-chan struct{} {
	return profileTo(b, path, func() ([]byte, error) {
		cfg := rest.CopyConfig(cp.Config)
		cfg.Timeout = 2 * time.Minute
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		return cs.Discovery().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", "60").DoRaw(context.Background())
	})
}

// harnessProfile writes a 60 s CPU profile of this process (the bench and the cluster muxes) to
// path, from now (path "": none); the channel closes when it is written.
func harnessProfile(b *testing.B, path string) <-chan struct{} {
	return profileTo(b, path, func() ([]byte, error) {
		var buf bytes.Buffer
		if err := pprof.StartCPUProfile(&buf); err != nil {
			return nil, err
		}
		time.Sleep(time.Minute)
		pprof.StopCPUProfile()
		return buf.Bytes(), nil
	})
}

// profileTo writes what fetch returns to path in the background (path "": nothing); the channel
// closes when it is done.
func profileTo(b *testing.B, path string, fetch func() ([]byte, error)) <-chan struct{} {
	done := make(chan struct{})
	if path == "" {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		raw, err := fetch()
		if err == nil {
			err = os.WriteFile(path, raw, 0o644)
		}
		if err != nil {
			b.Errorf("CPU profile for %s: %v", path, err)
		}
	}()
	return done
}

// goroutineTop groups the controller's goroutines by the function that started them and the one
// they wait in, largest groups first.
func goroutineTop(b *testing.B, port, top int) string {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/goroutine?debug=1", port))
	must(b, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	must(b, err)
	groups := map[string]int{}
	for _, block := range strings.Split(string(raw), "\n\n") {
		lines := strings.Split(strings.TrimSpace(block), "\n")
		var n int
		if len(lines) < 2 || !strings.Contains(lines[0], " @ ") {
			continue
		}
		if _, err := fmt.Sscanf(lines[0], "%d @", &n); err != nil {
			continue
		}
		var frames []string
		for _, l := range lines[1:] {
			if f := strings.Fields(l); len(f) >= 3 && f[0] == "#" {
				fn, _, _ := strings.Cut(f[2], "+0x")
				frames = append(frames, fn)
			}
		}
		if len(frames) == 0 {
			continue
		}
		// The first frame outside the runtime and sync says what it waits in; the last, what started it.
		wait := frames[0]
		for _, f := range frames {
			if !strings.HasPrefix(f, "runtime.") && !strings.HasPrefix(f, "sync.") && !strings.HasPrefix(f, "internal/") {
				wait = f
				break
			}
		}
		groups[frames[len(frames)-1]+" ← waits in "+wait] += n
	}
	type g struct {
		k string
		n int
	}
	var gs []g
	for k, n := range groups {
		gs = append(gs, g{k, n})
	}
	slices.SortFunc(gs, func(a, b g) int { return b.n - a.n })
	var out strings.Builder
	for i, x := range gs {
		if i == top {
			break
		}
		fmt.Fprintf(&out, "    %7d  %s\n", x.n, x.k)
	}
	return out.String()
}

// allChange sets n1 of clusters 0..k-1 ready or not at once (32 writers) and returns, per
// cluster, the time from its node's write to its DNSEndpoint showing it (every DNSEndpoint
// listed every 5 ms).
func allChange(ctx context.Context, b *testing.B, seed *framework.ControlPlane, k int, set func(i int, ready bool) error, ready bool) []time.Duration {
	want := 2
	if ready {
		want = 3
	}
	_, events := watchEndpoints(ctx, b, seed) // from before the changes

	var mu sync.Mutex
	written := map[string]time.Time{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		parallel(b, k, func(i int) error {
			err := set(i, ready)
			mu.Lock()
			written[fmt.Sprintf("u%d", i)] = time.Now()
			mu.Unlock()
			return err
		})
	}()
	seen := map[string]time.Time{}
	deadline := time.NewTimer(2 * time.Minute)
	defer deadline.Stop()
	for len(seen) < k {
		var ev watch.Event
		select {
		case ev = <-events:
		case <-deadline.C:
			b.Fatalf("after 2 min %d of %d DNSEndpoints show the change", len(seen), k)
		}
		ep, ok := ev.Object.(*dnsrecords.DNSEndpoint)
		if !ok {
			b.Fatalf("watching DNSEndpoints: %v", ev.Object)
		}
		var i int
		if _, err := fmt.Sscanf(ep.Name, "u%d", &i); err != nil || i >= k {
			continue
		}
		if _, ok := seen[ep.Name]; !ok && len(ep.Spec.Endpoints) > 0 && len(ep.Spec.Endpoints[0].Targets) == want {
			seen[ep.Name] = time.Now()
		}
	}
	<-done
	out := make([]time.Duration, 0, len(seen))
	for name, at := range seen {
		// The write returns after the API server stored it; the watch can beat the return.
		out = append(out, max(0, at.Sub(written[name])))
	}
	return out
}

// watchEndpoints lists the seed's DNSEndpoints in default and watches them from that list until
// ctx ends. Watched, not polled: listing a thousand of them every few milliseconds would load the
// seed API server the controller writes through.
func watchEndpoints(ctx context.Context, b *testing.B, seed *framework.ControlPlane) ([]dnsrecords.DNSEndpoint, <-chan watch.Event) {
	wc, err := client.NewWithWatch(seed.Config, client.Options{Scheme: seed.Client.Scheme()})
	must(b, err)
	var eps dnsrecords.DNSEndpointList
	must(b, wc.List(ctx, &eps, client.InNamespace("default")))
	w, err := wc.Watch(ctx, &dnsrecords.DNSEndpointList{}, client.InNamespace("default"),
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: eps.ResourceVersion}})
	must(b, err)
	b.Cleanup(w.Stop)
	return eps.Items, w.ResultChan()
}

// parallel runs f(0..n-1) on 32 workers and fails b with the first error.
func parallel(b testing.TB, n int, f func(i int) error) {
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
	items, events := watchEndpoints(ctx, b, seed)
	ok := map[string]bool{}
	note := func(ep *dnsrecords.DNSEndpoint) {
		var i int
		if _, err := fmt.Sscanf(ep.Name, "u%d", &i); err == nil && i < n {
			ok[ep.Name] = len(ep.Spec.Endpoints) > 0 && len(ep.Spec.Endpoints[0].Targets) == want(i)
		}
	}
	for i := range items {
		note(&items[i])
	}
	deadline := time.NewTimer(10 * time.Minute)
	defer deadline.Stop()
	for {
		done := 0
		for _, v := range ok {
			if v {
				done++
			}
		}
		if done == n {
			return
		}
		select {
		case ev := <-events:
			ep, isEP := ev.Object.(*dnsrecords.DNSEndpoint)
			if !isEP {
				b.Fatalf("watching DNSEndpoints: %v", ev.Object)
			}
			note(ep)
		case <-deadline.C:
			b.Fatalf("after 10 min %d of %d clusters published", done, n)
		}
	}
}

// cpuSample is the CPU time (clock ticks) of every process by pid and of the whole machine.
type cpuSample struct {
	procs       map[int]procCPU
	busy, total int64
	// steal: time the hypervisor gave this VM's CPUs to others (part of busy), which makes the
	// same work take longer from one run, or one day, to the next.
	steal int64
}

type procCPU struct {
	group string
	ticks int64
}

// processCPU reads /proc: each process's user+system time, grouped by what it is in the harness
// (the seed's kube-apiserver is the one writing an audit log; this process serves the cluster
// muxes), and the machine's busy and total time.
func processCPU(b *testing.B) cpuSample {
	s := cpuSample{procs: map[int]procCPU{}}
	raw, err := os.ReadFile("/proc/stat")
	must(b, err)
	line, _, _ := strings.Cut(string(raw), "\n")
	for i, f := range strings.Fields(line)[1:] {
		if i >= 8 { // guest time is counted in user time already
			break
		}
		v, _ := strconv.ParseInt(f, 10, 64)
		s.total += v
		if i != 3 && i != 4 { // idle, iowait
			s.busy += v
		}
		if i == 7 {
			s.steal = v
		}
	}
	entries, err := os.ReadDir("/proc")
	must(b, err)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		open, end := strings.IndexByte(string(stat), '('), strings.LastIndexByte(string(stat), ')')
		if open < 0 || end < open {
			continue
		}
		comm, rest := string(stat[open+1:end]), strings.Fields(string(stat[end+1:]))
		if len(rest) < 13 {
			continue
		}
		utime, _ := strconv.ParseInt(rest[11], 10, 64)
		stime, _ := strconv.ParseInt(rest[12], 10, 64)
		group := "other"
		switch {
		case pid == os.Getpid():
			group = "bench and cluster muxes"
		case comm == "kube-apiserver":
			cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			group = "user kube-apiservers"
			if strings.Contains(string(cmdline), "audit-log-path") {
				group = "seed kube-apiserver"
			}
		case comm == "etcd", comm == "seed-controller":
			group = comm
		}
		s.procs[pid] = procCPU{group: group, ticks: utime + stime}
	}
	return s
}

// cpuSpent says how many CPU-seconds each group of processes used between two samples (a process
// started meanwhile counts from zero) and how busy the machine was over wall.
func cpuSpent(before, after cpuSample, wall time.Duration) string {
	const hz = 100 // USER_HZ on Linux
	by := map[string]float64{}
	for pid, p := range after.procs {
		by[p.group] += float64(p.ticks-before.procs[pid].ticks) / hz
	}
	var parts []string
	for g, v := range by {
		if v >= 0.5 {
			parts = append(parts, fmt.Sprintf("%s %.0f", g, v))
		}
	}
	slices.Sort(parts)
	cores := float64(after.busy-before.busy) / hz / wall.Seconds()
	stolen := float64(after.steal-before.steal) / hz / wall.Seconds()
	return fmt.Sprintf("%s; machine busy %.2f of %d cores (%.2f of them stolen by the hypervisor)", strings.Join(parts, ", "), cores, runtime.NumCPU(), stolen)
}
