package kit

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/replicas/gate"
)

// Two replicas, each a manager with a controller of ClusterIngresses built through the kit and
// given its own gate, share a real seed: every cluster is reconciled by one replica only, and a
// conflict is retried (counted under that replica's controller) until the reconcile succeeds.
func TestBuiltControllersShareTheClusters(t *testing.T) {
	seed := controllertest.Seed(t)
	ns := controllertest.Namespace(t, seed.Client)
	ctx, cancel := context.WithCancel(context.Background())
	var stopped []<-chan struct{}
	defer func() {
		cancel()
		for _, s := range stopped {
			<-s
		}
	}()

	rec := &recorder{conflicted: types.NamespacedName{Namespace: ns, Name: "c0"}, conflicts: 1}
	ids := []string{"r1", "r2"}
	var owners []*gate.Owner
	for _, id := range ids {
		mgr, err := ctrl.NewManager(seed.Config, ctrl.Options{Scheme: seed.Client.Scheme(),
			Cache:   cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
			Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
		if err != nil {
			t.Fatal(err)
		}
		o := &gate.Owner{Client: seed.Client, Reader: seed.Client, Identity: id, Namespace: ns,
			LeaseDuration: 10 * time.Second, Renew: 500 * time.Millisecond, Log: mgr.GetLogger()}
		if err := mgr.Add(o); err != nil {
			t.Fatal(err)
		}
		owners = append(owners, o)
		// Controller names are unique in a process: one per replica here.
		if err := New(mgr, "kit-"+id, Config{Replicas: o}).For(&v1alpha1.ClusterIngress{}).Complete(rec.as(id)); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		stopped = append(stopped, done)
		go func() {
			defer close(done)
			if err := mgr.Start(ctx); err != nil {
				t.Errorf("manager %s: %v", id, err)
			}
		}()
	}
	// Clusters come once both replicas count each other: none changes owner during the test.
	waitLive(t, ids, owners...)
	const n = 16
	for i := range n {
		ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("c%d", i)},
			Spec: v1alpha1.ClusterIngressSpec{ClusterRef: v1alpha1.ClusterReference{Kind: v1alpha1.SourceKindSecret, Name: "c"},
				Profile: "p", ClusterID: fmt.Sprintf("c%d", i)}}
		if err := seed.Client.Create(ctx, ci); err != nil {
			t.Fatal(err)
		}
	}

	deadline := time.Now().Add(30 * time.Second)
	for {
		pending := 0
		for i := range n {
			k := types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("c%d", i)}
			want := 1
			if k == rec.conflicted {
				want = 2 // the conflict, then its retry
			}
			if len(rec.runs(k)) < want {
				pending++
			}
		}
		if pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d clusters not reconciled (as often as expected) within 30 s", pending)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // a request the other replica wrongly ran would show by now

	served := map[string]int{}
	for i := range n {
		k := types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("c%d", i)}
		runs := rec.runs(k)
		for _, r := range runs {
			if r != runs[0] {
				t.Fatalf("%s was reconciled by %v: two replicas", k, runs)
			}
		}
		served[runs[0]]++
		if k == rec.conflicted {
			if got := conflictsCounted(t, "kit-"+runs[0]); got != 1 {
				t.Fatalf("the conflict on %s counted %v times under kit-%s, want once", k, got, runs[0])
			}
		}
	}
	if served["r1"] == 0 || served["r2"] == 0 {
		t.Fatalf("the clusters were not shared: %v", served)
	}
}
