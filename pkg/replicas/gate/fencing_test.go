package gate

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// keyOf is the first of n keys that rendezvous hashing gives to want among live.
func keyOf(t *testing.T, live []string, want string) types.NamespacedName {
	for i := range 100 {
		if ownerOf(live, key(i)) == want {
			return key(i)
		}
	}
	t.Fatalf("no key of %s among %v", want, live)
	return types.NamespacedName{}
}

// A renewal of r1 that lands while r2's list of the replica Leases is slow (3 s) is dated when the
// list returned, never when it started: r2 counts r1 gone only after r1 stopped counting itself
// fresh, whatever the list latency. (Dated before the list, r1's renewal seemed 3 s older to r2
// than it was, and r2 took r1's cluster while r1 still entered it.)
func TestSlowListNeverAdmitsTwoReplicas(t *testing.T) {
	ctx := context.Background()
	c, clk := leaseStore(t)
	var r1 *Owner
	failing, slow := false, false
	r1c := interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{
		Update: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if failing && obj.GetName() == "shardgate-replica-r1" {
				return errors.New("the server is overloaded")
			}
			return cl.Update(ctx, obj, opts...)
		}})
	r2c := interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{
		List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*coordinationv1.LeaseList); ok && slow {
				slow = false
				clk.t = clk.t.Add(3 * time.Second) // the list takes 3 s; r1 renews meanwhile
				r1.renewTick(ctx)
			}
			return cl.List(ctx, list, opts...)
		}})
	r1, r2 := replica(r1c, clk, "r1"), replica(r2c, clk, "r2")
	k := keyOf(t, []string{"r1", "r2"}, "r1")

	r1.tick(ctx)
	if _, done, v := r1.enter(ctx, k); v != mine {
		t.Fatalf("r1 alone does not serve %s", k)
	} else {
		done()
	}
	r2.tick(ctx)
	r1.tick(ctx)
	slow = true
	r2.followTick(ctx, false)
	if slow {
		t.Fatal("r2's list was not slowed")
	}
	failing = true // r1's renewals fail from now on: it must stop before r2 may take k
	r2Took := false
	for step := range 28 { // 14 s in half seconds
		clk.t = clk.t.Add(500 * time.Millisecond)
		if step%2 == 0 {
			r1.tick(ctx)
			r2.tick(ctx)
		}
		if _, done, v := r2.enter(ctx, k); v == mine {
			r2Took = true
			done()
		}
		if _, done, v := r1.enter(ctx, k); v == mine {
			done()
			if r2Took {
				t.Fatalf("%v after the slow list: r1 and r2 both entered %s (fence %q)", time.Duration(step+1)*500*time.Millisecond, k,
					fenceHolder(ctx, t, c, k))
			}
		}
	}
	if !r2Took {
		t.Fatalf("r2 never took %s from r1, whose renewals failed for 14 s", k)
	}
}

// A write made under a fence this replica no longer holds fails, however the fence was lost:
// the replica paused past its Lease (another took the fence), or the fence Lease names another
// holder at the API server while this replica still counts itself fresh. Writes outside a gated
// reconcile, and under a fence still held, pass.
func TestLateWriteUnderALostFenceFails(t *testing.T) {
	ctx := context.Background()
	payload := func(name string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "tenants", Name: name}}
	}

	t.Run("paused past its Lease", func(t *testing.T) {
		c, clk := leaseStore(t)
		w := Writes(c)
		r1, r2 := replica(c, clk, "r1"), replica(c, clk, "r2")
		k := keyOf(t, []string{"r1", "r2"}, "r1")
		r1.tick(ctx)
		r2.tick(ctx)
		r1.tick(ctx)
		wctx, done, v := r1.enter(ctx, k)
		if v != mine {
			t.Fatalf("r1 does not serve %s", k)
		}
		defer done()
		if err := w.Create(wctx, payload("before")); err != nil {
			t.Fatalf("a write under a held fence: %v", err)
		}
		for range 7 { // r1 is paused for 14 s; r2 counts it gone and takes k
			clk.t = clk.t.Add(2 * time.Second)
			r2.tick(ctx)
		}
		if _, d, v := r2.enter(ctx, k); v != mine {
			t.Fatalf("r2 did not take %s from the paused r1", k)
		} else {
			d()
		}
		if err := w.Create(wctx, payload("late")); !errors.Is(err, ErrFenceLost) {
			t.Fatalf("r1's late write: %v, want ErrFenceLost", err)
		}
	})

	t.Run("taken at the API server while fresh here", func(t *testing.T) {
		c, clk := leaseStore(t)
		w := Writes(c)
		r1 := replica(c, clk, "r1")
		k := key(0)
		r1.tick(ctx)
		wctx, done, v := r1.enter(ctx, k)
		if v != mine {
			t.Fatalf("r1 alone does not serve %s", k)
		}
		defer done()
		if err := w.Status().Update(wctx, payload("x")); err == nil || errors.Is(err, ErrFenceLost) {
			t.Fatalf("a status write under a held fence reached the API (NotFound expected): %v", err)
		}
		// Whoever the API server now names holds the fence (a replica with a skewed clock, say).
		l := &coordinationv1.Lease{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: "shardgate", Name: fenceName(k)}, l); err != nil {
			t.Fatal(err)
		}
		l.Spec.HolderIdentity = ptr.To("r9")
		if err := c.Update(ctx, l); err != nil {
			t.Fatal(err)
		}
		if err := w.Create(wctx, payload("late")); !errors.Is(err, ErrFenceLost) {
			t.Fatalf("a write after the fence passed to r9: %v, want ErrFenceLost", err)
		}
		if err := c.Get(ctx, types.NamespacedName{Namespace: "tenants", Name: "late"}, &coordinationv1.Lease{}); err == nil {
			t.Fatal("the refused write landed")
		}
		if err := w.Create(ctx, payload("unfenced")); err != nil { // not a gated reconcile
			t.Fatalf("a write outside a reconcile: %v", err)
		}
	})
}

// A cluster-scoped key (a routed-IP class's firewall) is fenced like a cluster: while r1 still
// runs the class's reconcile, r2 — its new owner after joining — waits; it takes over once r1's
// reconcile ended and r1 gave the fence back.
func TestClusterScopedKeyHasOneRunner(t *testing.T) {
	ctx := context.Background()
	c, clk := leaseStore(t)
	r1, r2 := replica(c, clk, "r1"), replica(c, clk, "r2")
	var class types.NamespacedName
	for i := range 100 {
		k := types.NamespacedName{Name: fmt.Sprintf("class-%d", i)}
		if ownerOf([]string{"r1", "r2"}, k) == "r2" {
			class = k
			break
		}
	}
	r1.tick(ctx)
	_, done1, v := r1.enter(ctx, class)
	if v != mine {
		t.Fatalf("r1 alone does not run %s", class)
	}
	r2.tick(ctx)
	r1.tick(ctx)
	if _, d, v := r2.enter(ctx, class); v == mine {
		d()
		t.Fatalf("r2 runs %s while r1's reconcile of it still runs", class)
	}
	done1()
	r1.tick(ctx) // gives it back
	if _, _, v := r1.enter(ctx, class); v != notMine {
		t.Fatalf("r1 still decides %s for itself (%d)", class, v)
	}
	if _, d, v := r2.enter(ctx, class); v != mine {
		t.Fatalf("r2 cannot run %s after r1 gave it back", class)
	} else {
		d()
	}
}

// Keys of one group (the VIP clusters of one L2 domain) are served by one replica, so the
// domain's planner sees every member's nodes; a key moves when its group changes.
func TestGroupPlacesKeysOnOneReplica(t *testing.T) {
	ctx := context.Background()
	c, clk := leaseStore(t)
	r1, r2 := replica(c, clk, "r1"), replica(c, clk, "r2")
	a, b := keyOf(t, []string{"r1", "r2"}, "r1"), keyOf(t, []string{"r1", "r2"}, "r2")
	groups := map[types.NamespacedName]string{a: "vip-domain/rack-1", b: "vip-domain/rack-1"}
	for _, r := range []*Owner{r1, r2} {
		r.Group = func(k types.NamespacedName) string { return groups[k] }
	}
	r1.tick(ctx)
	r2.tick(ctx)
	r1.tick(ctx)
	both := map[string]int{}
	for _, r := range []*Owner{r1, r2} {
		for _, k := range []types.NamespacedName{a, b} {
			if _, d, v := r.enter(ctx, k); v == mine {
				both[r.Identity]++
				d()
			}
		}
	}
	if len(both) != 1 || both["r1"]+both["r2"] != 2 {
		t.Fatalf("one domain's clusters served as %v, want both by one replica", both)
	}
	// b leaves the domain: it goes back to its own replica once the domain's replica let it go;
	// a reconcile of b running there meanwhile can write no more.
	owner, domainReplica := "r1", r1
	if both["r2"] == 2 {
		owner, domainReplica = "r2", r2
	}
	wctx, done, v := domainReplica.enter(ctx, b)
	if v != mine {
		t.Fatalf("%s does not serve %s", owner, b)
	}
	delete(groups, b)
	err := Writes(c).Create(wctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "tenants", Name: "vips"}})
	done()
	if ownerOf([]string{"r1", "r2"}, b) != owner && !errors.Is(err, ErrFenceLost) {
		t.Fatalf("a write for %s, which left the domain served by %s: %v, want ErrFenceLost", b, owner, err)
	}
	r1.tick(ctx)
	r2.tick(ctx)
	alone := r1
	if ownerOf([]string{"r1", "r2"}, b) == "r2" {
		alone = r2
	}
	if _, d, v := alone.enter(ctx, b); v != mine {
		t.Fatalf("%s does not serve %s once it left the domain held by %s", alone.Identity, b, owner)
	} else {
		d()
	}
}

// Groups follows the ClusterIngresses' groups from informer events.
func TestGroupsFollowTheInformer(t *testing.T) {
	g := &Groups{Of: func(ci *v1alpha1.ClusterIngress) string { return ci.Spec.VIP.L2Domain }}
	h := g.Handler()
	ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: "tenants", Name: "a"}}
	k := types.NamespacedName{Namespace: "tenants", Name: "a"}
	h.OnAdd(ci, true)
	if got := g.Get(k); got != "" {
		t.Fatalf("no domain: group %q", got)
	}
	in := ci.DeepCopy()
	in.Spec.VIP.L2Domain = "rack-1"
	h.OnUpdate(ci, in)
	if got := g.Get(k); got != "rack-1" {
		t.Fatalf("after the update: group %q", got)
	}
	h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: k.String(), Obj: in})
	if got := g.Get(k); got != "" {
		t.Fatalf("after the delete: group %q", got)
	}
}
