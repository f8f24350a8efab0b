package gate

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// clock is shared by the replicas of a test: time moves only when the test says.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func replica(c client.Client, clk *clock, id string) *Owner {
	return &Owner{Client: c, Reader: c, Identity: id, Namespace: "shardgate", LeaseDuration: 10 * time.Second, Renew: 2 * time.Second,
		Log: logr.Discard(), Now: clk.now, held: map[types.NamespacedName]*fence{}}
}

// leaseStore is the API the replicas share (Leases only) and the clock they share.
func leaseStore(t *testing.T) (client.Client, *clock) {
	s := runtime.NewScheme()
	if err := coordinationv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).Build(), &clock{t: time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC)}
}

func key(i int) types.NamespacedName {
	return types.NamespacedName{Namespace: "tenants", Name: fmt.Sprintf("c%d", i)}
}

// serve asks o to enter every key and returns the ones it served (leaving at once).
func serve(ctx context.Context, o *Owner, n int) map[types.NamespacedName]bool {
	out := map[types.NamespacedName]bool{}
	for i := range n {
		if _, done, v := o.enter(ctx, key(i)); v == mine {
			out[key(i)] = true
			done()
		}
	}
	return out
}

func fenceHolder(ctx context.Context, t *testing.T, c client.Client, k types.NamespacedName) string {
	l := &coordinationv1.Lease{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "shardgate", Name: fenceName(k)}, l); err != nil {
		return "none"
	}
	return ptr.Deref(l.Spec.HolderIdentity, "")
}

func TestOwnersShareAndHandOver(t *testing.T) {
	ctx := context.Background()
	c, clk := leaseStore(t)
	r1, r2 := replica(c, clk, "r1"), replica(c, clk, "r2")
	const n = 40

	// r1 starts alone: it serves every cluster and holds every fence.
	r1.tick(ctx)
	if got := len(serve(ctx, r1, n)); got != n {
		t.Fatalf("r1 alone serves %d of %d", got, n)
	}
	// r2 joins. Until r1 has given a cluster back, r2 waits: never two writers.
	r2.tick(ctx)
	r1.tick(ctx) // sees r2; gives back r2's share (nothing of it in flight)
	mine1, mine2 := serve(ctx, r1, n), serve(ctx, r2, n)
	if len(mine1)+len(mine2) != n || len(mine1) == 0 || len(mine2) == 0 {
		t.Fatalf("shared %d + %d of %d", len(mine1), len(mine2), n)
	}
	for k := range mine2 {
		if mine1[k] || fenceHolder(ctx, t, c, k) != "r2" {
			t.Fatalf("%s: served by both, or fence %q", k, fenceHolder(ctx, t, c, k))
		}
	}

	// A reconcile in flight keeps its fence: r3 joins, but r1 gives a cluster back only after
	// the reconcile running for it has ended.
	r3 := replica(c, clk, "r3")
	r3.tick(ctx)
	var busy types.NamespacedName
	var done func()
	for i := range n {
		k := key(i)
		if !mine1[k] {
			continue
		}
		if _, d, v := r1.enter(ctx, k); v == mine {
			// Is it r3's now? (r1 has not seen r3 yet.)
			if ownerOf([]string{"r1", "r2", "r3"}, k) == "r3" {
				busy, done = k, d
				break
			}
			d()
		}
	}
	if done == nil {
		t.Fatal("no cluster of r1 moves to r3")
	}
	r1.tick(ctx)
	if _, _, v := r3.enter(ctx, busy); v != waiting || fenceHolder(ctx, t, c, busy) != "r1" {
		t.Fatalf("r3 entered %s while r1's reconcile still runs (fence %q)", busy, fenceHolder(ctx, t, c, busy))
	}
	done()
	r1.tick(ctx)
	if _, d, v := r3.enter(ctx, busy); v != mine {
		t.Fatalf("r3 could not take %s after r1 finished", busy)
	} else {
		d()
	}

	// r2 dies (stops renewing). Once its Lease expired the others take its clusters, without a
	// release from it.
	for range 6 {
		clk.t = clk.t.Add(2 * time.Second)
		r1.tick(ctx)
		r3.tick(ctx)
	}
	mine1, mine3 := serve(ctx, r1, n), serve(ctx, r3, n)
	if len(mine1)+len(mine3) != n {
		t.Fatalf("after r2 died: %d + %d of %d", len(mine1), len(mine3), n)
	}
	// r2 itself, not renewed for 12 s, refuses to work even for the clusters it still believes
	// are its own: its fences may already be someone else's.
	if got := serve(ctx, r2, n); len(got) != 0 {
		t.Fatalf("a stale replica served %d clusters", len(got))
	}
	// r2 comes back (it was paused): it forgets what it held and takes its share again only
	// through the fences, which r1 and r3 give back first.
	r2.tick(ctx)
	if got := serve(ctx, r2, n); len(got) != 0 {
		t.Fatalf("r2 served %d clusters right after coming back, while r1/r3 hold them", len(got))
	}
	r1.tick(ctx)
	r3.tick(ctx)
	back := serve(ctx, r2, n)
	mine1, mine3 = serve(ctx, r1, n), serve(ctx, r3, n)
	if len(back) == 0 || len(back)+len(mine1)+len(mine3) != n {
		t.Fatalf("after r2 came back: %d + %d + %d of %d", len(back), len(mine1), len(mine3), n)
	}
	for k := range back {
		if mine1[k] || mine3[k] || fenceHolder(ctx, t, c, k) != "r2" {
			t.Fatalf("%s served twice or fenced by %q", k, fenceHolder(ctx, t, c, k))
		}
	}
}

func ownerOf(live []string, k types.NamespacedName) string { return (&Owner{}).ownerKey(live, k) }

// A replica whose view of the live replicas is stale (it listed before another one started) does
// not take a fence from that other, live replica.
func TestStaleViewTakesNothingFromALiveReplica(t *testing.T) {
	ctx := context.Background()
	c, clk := leaseStore(t)
	r1, r3 := replica(c, clk, "r1"), replica(c, clk, "r3")
	r3.tick(ctx) // r3 lists: only itself
	r1.tick(ctx)
	served := serve(ctx, r1, 20) // r1, seeing both, serves its share and holds those fences
	if len(served) == 0 {
		t.Fatal("r1 serves nothing")
	}
	for k := range served {
		if _, _, v := r3.enter(ctx, k); v != waiting || fenceHolder(ctx, t, c, k) != "r1" {
			t.Fatalf("r3, with a stale view, took %s from live r1 (fence %q)", k, fenceHolder(ctx, t, c, k))
		}
	}
}

// A fence being taken again (after a lapse) while the cluster moves to another replica is not
// entered: the release that the move causes and the re-take cannot interleave into a reconcile
// running without the Lease (seen in TestSharding's audit log before enter re-checked).
func TestRetakeRacingAHandOverIsNotEntered(t *testing.T) {
	ctx := context.Background()
	c, clk := leaseStore(t)
	var r1 *Owner
	var k types.NamespacedName
	fired := false
	hooked := interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			err := cl.Get(ctx, key, obj, opts...)
			if !fired && key.Name == fenceName(k) {
				fired = true
				r1.followTick(ctx, false) // r1 sees r2 while it reads the fence
			}
			return err
		}})
	r1 = replica(hooked, clk, "r1")
	r2 := replica(c, clk, "r2")
	for i := range 40 {
		if ownerOf([]string{"r1", "r2"}, key(i)) == "r2" {
			k = key(i)
			break
		}
	}
	r1.tick(ctx)
	fired = true // not while r1 takes its fences the first time
	if got := serve(ctx, r1, 40); !got[k] {
		t.Fatalf("r1 alone does not serve %s", k)
	}
	clk.t = clk.t.Add(10 * time.Second) // r1's renewal comes late: its fences are forgotten
	r1.tick(ctx)
	r2.tick(ctx)
	fired = false
	if _, done, v := r1.enter(ctx, k); v == mine {
		done()
		t.Fatalf("r1 entered %s, which moved to r2 while r1 read its fence (fence %q)", k, fenceHolder(ctx, t, c, k))
	}
	if !fired {
		t.Fatal("the hand-over did not happen during the read")
	}
	r1.tick(ctx) // gives it back now
	if h := fenceHolder(ctx, t, c, k); h != "" {
		t.Fatalf("fence of %s held by %q after r1 gave it back", k, h)
	}
	if _, done, v := r2.enter(ctx, k); v != mine {
		t.Fatalf("r2 cannot take %s", k)
	} else {
		done()
	}
}

// A replica that lapsed and comes back claims its fences again with a write: a replica that
// counted it gone and is taking a fence at that moment loses (or wins) by resourceVersion, never
// both. (Trusting "the Lease still names me" let both write.)
func TestLapsedReplicaReclaimsWithAWrite(t *testing.T) {
	ctx := context.Background()
	c, clk := leaseStore(t)
	r1 := replica(c, clk, "r1")
	var k types.NamespacedName
	for i := range 40 {
		if ownerOf([]string{"r1", "r3"}, key(i)) == "r1" {
			k = key(i)
			break
		}
	}
	var r1Verdict verdict
	racing := false
	hooked := interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{
		Update: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if racing && obj.GetName() == fenceName(k) {
				racing = false
				r1.tick(ctx) // r1 renews at last, and enters k meanwhile
				if _, done, v := r1.enter(ctx, k); v == mine {
					r1Verdict = v
					done()
				}
			}
			return cl.Update(ctx, obj, opts...)
		}})
	r3 := replica(hooked, clk, "r3")
	r1.tick(ctx)
	if _, done, v := r1.enter(ctx, k); v != mine {
		t.Fatalf("r1 alone does not serve %s", k)
	} else {
		done()
	}
	r3.tick(ctx)
	for range 6 { // r1 stalls for 12 s; r3 lists every 2 s and sees r1's Lease unchanged
		clk.t = clk.t.Add(2 * time.Second)
		r3.tick(ctx)
	}
	racing = true
	_, done3, v3 := r3.enter(ctx, k)
	if done3 != nil {
		done3()
	}
	if racing {
		t.Fatal("r3 did not try to take the fence")
	}
	holder := fenceHolder(ctx, t, c, k)
	switch {
	case v3 == mine && r1Verdict == mine:
		t.Fatalf("both r1 and r3 entered %s (fence %q)", k, holder)
	case v3 == mine && holder != "r3", r1Verdict == mine && holder != "r1":
		t.Fatalf("entered by r3=%v r1=%v but the fence names %q", v3 == mine, r1Verdict == mine, holder)
	}
}

// A cluster whose ClusterIngress does not exist yet (only its source does) is dropped as "not
// mine" by every replica but its owner. If the owner goes before creating it, the replica the
// cluster moves to is told of it through the keys Keys lists — even when a list behind Keys failed
// (TestSharding lost every cluster of a start this way while only ClusterIngresses were announced).
func TestHandOverAnnouncesClustersNotCreatedYet(t *testing.T) {
	ctx := context.Background()
	c, clk := leaseStore(t)
	r1, r2 := replica(c, clk, "r1"), replica(c, clk, "r2")
	const n = 20
	var sources []types.NamespacedName
	for i := range n {
		sources = append(sources, key(i))
	}
	r2.Keys = func(context.Context) ([]types.NamespacedName, error) {
		return sources, fmt.Errorf("listing Cluster API Clusters: the server is away")
	}
	told := r2.subscribe()
	r1.tick(ctx)
	r2.tick(ctx)
	r1.tick(ctx)
	drain := func() map[types.NamespacedName]bool {
		got := map[types.NamespacedName]bool{}
		for {
			select {
			case e := <-told:
				got[client.ObjectKeyFromObject(e.Object)] = true
			default:
				return got
			}
		}
	}
	drain() // r2's own first view
	var r1s []types.NamespacedName
	for _, k := range sources {
		if _, _, v := r2.enter(ctx, k); v == notMine {
			r1s = append(r1s, k)
		}
	}
	if len(r1s) == 0 {
		t.Fatal("r1 serves none of the clusters")
	}
	// r1 dies before creating anything: r2 sees it gone and must be told of r1's clusters.
	for range 6 {
		clk.t = clk.t.Add(2 * time.Second)
		r2.tick(ctx)
	}
	got := drain()
	for _, k := range r1s {
		if !got[k] {
			t.Fatalf("r2 was not told of %s, which moved to it from the dead r1 (told %d keys)", k, len(got))
		}
		if _, done, v := r2.enter(ctx, k); v != mine {
			t.Fatalf("r2 cannot serve %s after r1 died", k)
		} else {
			done()
		}
	}
}

// A replica whose last list of the live replicas came before its own first renewal does not know
// yet what it serves: it keeps every request (waiting) rather than dropping them as others'.
func TestUnlistedReplicaKeepsRequests(t *testing.T) {
	ctx := context.Background()
	c, clk := leaseStore(t)
	r1, r2 := replica(c, clk, "r1"), replica(c, clk, "r2")
	r1.tick(ctx)
	if got := len(serve(ctx, r1, 20)); got != 20 { // r1 alone holds every fence
		t.Fatalf("r1 alone serves %d of 20", got)
	}
	r2.followTick(ctx, false) // lists [r1] before r2's Lease exists
	r2.renewTick(ctx)
	for i := range 20 {
		if _, _, v := r2.enter(ctx, key(i)); v != waiting {
			t.Fatalf("r2, not in its own list of live replicas yet, decided %s (%d) instead of waiting", key(i), v)
		}
	}
	r2.followTick(ctx, false)
	if got := len(serve(ctx, r2, 20)); got != 0 {
		t.Fatalf("r2 served %d clusters whose fences r1 holds", got)
	}
	r1.tick(ctx)
	if got := len(serve(ctx, r2, 20)); got == 0 {
		t.Fatal("r2 serves nothing once listed and r1 gave its share back")
	}
}

// Held is what the "clusters owned by no replica" alert compares with shardgate_clusters: a
// fenced profile or routed-IP class (cluster-scoped keys) is no user cluster.
func TestHeldCountsUserClustersOnly(t *testing.T) {
	ctx := context.Background()
	c, clk := leaseStore(t)
	r := replica(c, clk, "r1")
	r.tick(ctx)
	if got := len(serve(ctx, r, 3)); got != 3 {
		t.Fatalf("served %d of 3", got)
	}
	if _, done, v := r.enter(ctx, types.NamespacedName{Name: "a-profile"}); v != mine {
		t.Fatalf("a cluster-scoped key: %v", v)
	} else {
		done()
	}
	if got := r.Held(); got != 3 {
		t.Errorf("Held() = %d, want the 3 clusters", got)
	}
}
