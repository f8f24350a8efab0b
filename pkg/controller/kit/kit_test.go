package kit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/shardgate/shardgate/pkg/replicas/gate"
	"github.com/shardgate/shardgate/test/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

var errConflict = apierrors.NewConflict(schema.GroupResource{Group: "shardgate.io", Resource: "clusteringresses"}, "c",
	errors.New("the object has been modified"))

// recorder is a reconciler that notes which replica ran which key, and answers one conflict for
// the key conflicted.
type recorder struct {
	mu         sync.Mutex
	ran        map[types.NamespacedName][]string
	conflicted types.NamespacedName
	conflicts  int
}

func (r *recorder) as(replica string) reconcile.Reconciler {
	return reconcile.Func(func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.ran == nil {
			r.ran = map[types.NamespacedName][]string{}
		}
		r.ran[req.NamespacedName] = append(r.ran[req.NamespacedName], replica)
		if req.NamespacedName == r.conflicted && r.conflicts > 0 {
			r.conflicts--
			return reconcile.Result{}, fmt.Errorf("status: %w", errConflict)
		}
		return reconcile.Result{}, nil
	})
}

func (r *recorder) runs(k types.NamespacedName) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ran[k])
}

// startReplica runs a replica's membership on c's Leases until ctx ends; the returned channel
// closes once it stopped (and gave its Leases back).
func startReplica(ctx context.Context, t *testing.T, c client.Client, ns, id string) (*gate.Owner, <-chan struct{}) {
	t.Helper()
	o := &gate.Owner{Client: c, Reader: c, Identity: id, Namespace: ns, LeaseDuration: 10 * time.Second,
		Renew: 500 * time.Millisecond, Log: logr.Discard()}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		if err := o.Start(ctx); err != nil {
			t.Errorf("replica %s: %v", id, err)
		}
	}()
	return o, stopped
}

// waitLive waits until every owner counts exactly the given replicas live.
func waitLive(t *testing.T, want []string, owners ...*gate.Owner) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for _, o := range owners {
		for !slices.Equal(o.Live(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("%s sees %v live, want %v", o.Identity, o.Live(), want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// conflictsCounted is shardgate_write_conflicts_total for controller.
func conflictsCounted(t *testing.T, controller string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "shardgate_write_conflicts_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// Two replicas in one process, each with its own gate (no global: a process-wide gate would give
// both the same answers): for every cluster, exactly one replica runs the reconciler the kit
// wrapped, the other ends the request at once without running it or asking for a retry; a
// conflict is a quiet requeue counted under the controller's name; Around sees every request,
// whoever serves it. With no gate (one replica) every request runs.
func TestWrapGatesAndRetriesConflicts(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c := fake.NewClientBuilder().Build()
	o1, stopped1 := startReplica(ctx, t, c, "shardgate", "r1")
	o2, stopped2 := startReplica(ctx, t, c, "shardgate", "r2")
	defer func() { cancel(); <-stopped1; <-stopped2 }()
	waitLive(t, []string{"r1", "r2"}, o1, o2)

	rec := &recorder{conflicted: types.NamespacedName{Namespace: "tenants", Name: "c0"}, conflicts: 1}
	const name = "kit-wrap-test"
	var aroundMu sync.Mutex
	around := map[string]int{}
	seen := func(id string) func(reconcile.Reconciler) reconcile.Reconciler {
		return func(r reconcile.Reconciler) reconcile.Reconciler {
			return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
				aroundMu.Lock()
				around[id]++
				aroundMu.Unlock()
				return r.Reconcile(ctx, req)
			})
		}
	}
	gated := map[string]reconcile.Reconciler{
		"r1": (&Builder{name: name, cfg: Config{Replicas: o1}}).Around(seen("r1")).wrapped(rec.as("r1")),
		"r2": (&Builder{name: name, cfg: Config{Replicas: o2}}).Around(seen("r2")).wrapped(rec.as("r2")),
	}
	served := map[string]int{}
	for i := range 16 {
		k := types.NamespacedName{Namespace: "tenants", Name: fmt.Sprintf("c%d", i)}
		answers := map[string]reconcile.Result{}
		for _, id := range []string{"r1", "r2"} {
			// A fence that is not free yet asks for a retry a second later; the owner takes it
			// at its first request here, since nobody else holds it.
			res, err := gated[id].Reconcile(ctx, reconcile.Request{NamespacedName: k})
			if err != nil {
				t.Fatalf("%s on %s: %v", id, k, err)
			}
			answers[id] = res
		}
		runs := rec.runs(k)
		if len(runs) != 1 {
			t.Fatalf("%s was run by %v, want exactly one replica", k, runs)
		}
		served[runs[0]]++
		other := "r1"
		if runs[0] == "r1" {
			other = "r2"
		}
		if answers[other] != (reconcile.Result{}) {
			t.Fatalf("%s, which %s owns, answered %+v on %s: want the request ended, not retried", k, runs[0], answers[other], other)
		}
		if k == rec.conflicted {
			if answers[runs[0]].RequeueAfter <= 0 {
				t.Fatalf("a conflict on %s was not requeued: %+v", k, answers[runs[0]])
			}
			if n := conflictsCounted(t, name); n != 1 {
				t.Fatalf("shardgate_write_conflicts_total{controller=%q} = %v, want 1", name, n)
			}
		}
	}
	if served["r1"] == 0 || served["r2"] == 0 {
		t.Fatalf("the clusters were not shared: %v", served)
	}
	if around["r1"] != 16 || around["r2"] != 16 {
		t.Fatalf("Around saw %v requests, want all 16 on each replica", around)
	}

	one := &recorder{}
	r := (&Builder{name: name}).wrapped(one.as("alone"))
	for i := range 4 {
		k := types.NamespacedName{Namespace: "tenants", Name: fmt.Sprintf("c%d", i)}
		if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: k}); err != nil || len(one.runs(k)) != 1 {
			t.Fatalf("one replica, %s: runs %v, error %v", k, one.runs(k), err)
		}
	}
}
