package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/dnsrecords"
	"github.com/shardgate/shardgate/test/framework"
)

// BenchmarkDNSConvergence prints, side by side, the time from a node change in a user cluster to
// the DNSEndpoint in the seed holding the new targets (p50/p99 with 1 and 10 user clusters), and
// the writes the controller makes to the seed API server over 60 s of steady state with 10
// clusters. User clusters here are bare control planes whose Nodes the benchmark writes directly
// (no kwok: nothing else changes them), and the seed controller is the real binary.
// Run with -benchtime=1x (make bench does): one run is a full scale run.
func BenchmarkDNSConvergence(b *testing.B) {
	for _, clusters := range []int{1, 10} {
		b.Run(fmt.Sprintf("clusters=%d", clusters), func(b *testing.B) {
			for range b.N {
				p50, p99, writes := convergenceRun(b, clusters, 40, clusters == 10)
				b.ReportMetric(p50.Seconds(), "p50-s")
				b.ReportMetric(p99.Seconds(), "p99-s")
				if writes >= 0 {
					b.ReportMetric(float64(writes), "steady-writes/60s")
				}
				fmt.Printf("dns convergence: %d cluster(s): node change -> DNSEndpoint written p50 %s p99 %s (target p99 <= 0.5s)", clusters,
					p50.Round(time.Millisecond), p99.Round(time.Millisecond))
				if writes >= 0 {
					fmt.Printf("; seed writes in 60s steady state: %d (target 0)", writes)
				}
				fmt.Println()
			}
		})
	}
}

func convergenceRun(b *testing.B, clusters, samples int, steady bool) (p50, p99 time.Duration, writes int) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	env := framework.StartEnvironment(b, framework.EnvironmentOptions{UserClusters: clusters})
	seed := env.Seed
	createProfileB(ctx, b, seed)
	for i, u := range env.Users {
		benchCluster(ctx, b, seed, u, i, fmt.Sprintf("u%d", i))
	}
	framework.StartController(b, seed, "--dns-zone=bench.test")
	for i := range env.Users {
		waitTargets(ctx, b, seed, fmt.Sprintf("u%d", i), 3)
	}

	var lat []time.Duration
	b.ResetTimer()
	for s := range samples {
		i := s % clusters
		u := env.Users[i]
		node := fmt.Sprintf("n%d", 1+(s/clusters)%3)
		ready := (s/(clusters*3))%2 == 1 // first pass takes nodes out, the second brings them back
		start := time.Now()
		setReadyStatus(ctx, b, u, node, ready)
		want := 3
		if !ready {
			want = 2
		}
		waitTargets(ctx, b, seed, fmt.Sprintf("u%d", i), want)
		lat = append(lat, time.Since(start))
		if !ready {
			setReadyStatus(ctx, b, u, node, true)
			waitTargets(ctx, b, seed, fmt.Sprintf("u%d", i), 3)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	p50, p99 = lat[len(lat)/2], lat[(len(lat)*99+99)/100-1]
	writes = -1
	if steady {
		time.Sleep(5 * time.Second) // let status settle
		before := seedWrites(ctx, b, seed)
		time.Sleep(60 * time.Second)
		writes = seedWrites(ctx, b, seed) - before
	}
	return p50, p99, writes
}

// benchCluster gives user cluster i three ready nodes 127.0.<100+i>.1-3 and registers it with the
// seed as kubeconfig Secret name.
func benchCluster(ctx context.Context, b testing.TB, seed, u *framework.ControlPlane, i int, name string) {
	for j := 1; j <= 3; j++ {
		createReadyNode(ctx, b, u, fmt.Sprintf("n%d", j), fmt.Sprintf("127.0.%d.%d", 100+i, j))
	}
	kc, err := u.Kubeconfig("shardgate", "system:masters")
	if err != nil {
		b.Fatal(err)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name,
		Labels: map[string]string{v1alpha1.KubeconfigSecretLabel: "true"}}, Data: map[string][]byte{"value": kc}}
	if err := seed.Client.Create(ctx, s); err != nil {
		b.Fatal(err)
	}
}

func createProfileB(ctx context.Context, b testing.TB, seed *framework.ControlPlane) {
	// NodePort publishing: targets follow node readiness alone (no router pods run here).
	p := &v1alpha1.IngressProfile{ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: v1alpha1.IngressProfileSpec{Shards: []v1alpha1.ShardSpec{{Name: v1alpha1.DefaultShardName, Publishing: v1alpha1.PublishNodePort}}}}
	if err := seed.Client.Create(ctx, p); err != nil {
		b.Fatal(err)
	}
}

func createReadyNode(ctx context.Context, b testing.TB, u *framework.ControlPlane, name, ip string) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := u.Client.Create(ctx, n); err != nil {
		b.Fatal(err)
	}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "Bench"}}
	if err := u.Client.Status().Update(ctx, n); err != nil {
		b.Fatal(err)
	}
}

func setReadyStatus(ctx context.Context, b *testing.B, u *framework.ControlPlane, name string, ready bool) {
	if err := setReady(ctx, u, name, ready); err != nil {
		b.Fatal(err)
	}
}

// waitTargets polls the seed (1 ms apart, the API server answers in well under that) until the
// cluster's DNSEndpoint has want targets.
func waitTargets(ctx context.Context, b *testing.B, seed *framework.ControlPlane, name string, want int) {
	deadline := time.Now().Add(60 * time.Second)
	for {
		ep := &dnsrecords.DNSEndpoint{}
		err := seed.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: name}, ep)
		if err == nil && len(ep.Spec.Endpoints) > 0 && len(ep.Spec.Endpoints[0].Targets) == want {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("DNSEndpoint %s never reached %d targets (last err %v)", name, want, err)
		}
		time.Sleep(time.Millisecond)
	}
}

// seedWrites sums the seed API server's write requests to Shardgate's and external-dns' resources.
func seedWrites(ctx context.Context, b *testing.B, seed *framework.ControlPlane) int {
	total := 0
	for _, n := range seedWritesByResource(ctx, b, seed) {
		total += n
	}
	return total
}

// seedWritesByResource counts the seed API server's write requests to Shardgate's and
// external-dns' resources by "resource[/subresource] VERB code".
func seedWritesByResource(ctx context.Context, b testing.TB, seed *framework.ControlPlane) map[string]int {
	cs, err := kubernetes.NewForConfig(seed.Config)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]int{}
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		if !strings.Contains(line, `group="shardgate.io"`) && !strings.Contains(line, `group="externaldns.k8s.io"`) {
			continue
		}
		label := func(name string) string {
			_, rest, _ := strings.Cut(line, name+`="`)
			v, _, _ := strings.Cut(rest, `"`)
			return v
		}
		switch label("verb") {
		case "POST", "PUT", "PATCH", "DELETE", "APPLY":
		default:
			continue
		}
		var v float64
		fields := strings.Fields(line)
		if _, err := fmt.Sscanf(fields[len(fields)-1], "%g", &v); err == nil {
			key := label("resource")
			if sub := label("subresource"); sub != "" {
				key += "/" + sub
			}
			out[key+" "+label("verb")+" "+label("code")] += int(v)
		}
	}
	return out
}
