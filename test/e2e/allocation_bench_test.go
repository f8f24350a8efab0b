package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/test/framework"
)

// BenchmarkAllocation prints how long 10,000 Ingresses created at once in one user cluster take
// to be allocated (target <= 30 s), and the p50/p99 from creating one Ingress to it being
// allocated in a cluster that already has them (target p99 <= 1 s).
func BenchmarkAllocation(b *testing.B) {
	const total, namespaces, singles = 10000, 10, 100
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	for range b.N {
		env := framework.StartEnvironment(b, framework.EnvironmentOptions{UserClusters: 1})
		u := env.Users[0]
		p := &v1alpha1.IngressProfile{ObjectMeta: metav1.ObjectMeta{Name: "bench"}, Spec: v1alpha1.IngressProfileSpec{
			Shards: []v1alpha1.ShardSpec{{Name: "default", Publishing: v1alpha1.PublishNodePort}, {Name: "a", Publishing: v1alpha1.PublishNodePort}, {Name: "b", Publishing: v1alpha1.PublishNodePort}},
		}}
		if err := env.Seed.Client.Create(ctx, p); err != nil {
			b.Fatal(err)
		}
		createReadyNode(ctx, b, u, "n1", "127.0.60.1")
		kc, err := u.Kubeconfig("shardgate", "system:masters")
		if err != nil {
			b.Fatal(err)
		}
		if err := env.Seed.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "big",
			Labels: map[string]string{v1alpha1.KubeconfigSecretLabel: "true"}}, Data: map[string][]byte{"value": kc}}); err != nil {
			b.Fatal(err)
		}
		framework.StartController(b, env.Seed, "--dns-zone=bench.test")
		fast := fastClient(b, u)
		for n := range namespaces {
			if err := fast.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ns%d", n)}}); err != nil {
				b.Fatal(err)
			}
		}
		// Wait until the cluster is engaged and its policy installed, so the clock measures
		// allocation, not start-up.
		waitAllocated(ctx, b, fast, 0)

		start := time.Now()
		var next atomic.Int64
		var wg sync.WaitGroup
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := next.Add(1) - 1
					if i >= total {
						return
					}
					ing := routeIngress(fmt.Sprintf("ns%d", i%namespaces), fmt.Sprintf("r%d", i), "")
					if err := fast.Create(ctx, ing); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		created := time.Since(start)
		waitAllocated(ctx, b, fast, total)
		bulk := time.Since(start)

		var lat []time.Duration
		for i := range singles {
			ing := routeIngress("ns0", fmt.Sprintf("single%d", i), "")
			t0 := time.Now()
			if err := fast.Create(ctx, ing); err != nil {
				b.Fatal(err)
			}
			for {
				got := &networkingv1.Ingress{}
				if err := fast.Get(ctx, client.ObjectKeyFromObject(ing), got); err == nil && got.Annotations[v1alpha1.AllocationAnnotation] == v1alpha1.AllocationAllocated {
					break
				}
				if time.Since(t0) > time.Minute {
					b.Fatalf("%s not allocated in a minute", ing.Name)
				}
				time.Sleep(5 * time.Millisecond)
			}
			lat = append(lat, time.Since(t0))
		}
		slices.Sort(lat)
		p50, p99 := lat[len(lat)/2], lat[(len(lat)*99+99)/100-1]
		b.ReportMetric(bulk.Seconds(), "10k-allocated-s")
		b.ReportMetric(p50.Seconds(), "create-to-allocated-p50-s")
		b.ReportMetric(p99.Seconds(), "create-to-allocated-p99-s")
		fmt.Printf("allocation: %d Ingresses created in %s, all allocated after %s (target <= 30s); then create -> allocated p50 %s p99 %s over %d (target p99 <= 1s)\n",
			total, created.Round(time.Millisecond), bulk.Round(time.Millisecond), p50.Round(time.Millisecond), p99.Round(time.Millisecond), singles)
	}
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

// waitAllocated waits until at least want Ingresses carry the Allocated annotation (for 0: until
// the allocation policy is in place, i.e. the admission policy exists).
func waitAllocated(ctx context.Context, b *testing.B, c client.Client, want int) {
	deadline := time.Now().Add(10 * time.Minute)
	for {
		if want == 0 {
			cm := &corev1.ConfigMap{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: "kube-public", Name: "shardgate-ingress"}, cm); err == nil {
				return
			}
		} else {
			l := &networkingv1.IngressList{}
			if err := c.List(ctx, l); err == nil {
				n := 0
				for _, i := range l.Items {
					if i.Annotations[v1alpha1.AllocationAnnotation] == v1alpha1.AllocationAllocated {
						n++
					}
				}
				if n >= want {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("fewer than %d Ingresses allocated after 10 minutes", want)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
