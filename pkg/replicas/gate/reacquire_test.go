package gate

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// A replica whose Lease lapsed while another replica took its cluster, and that gets the cluster
// back, is told before it serves it again (OnAcquire): its status board forgets the parts from
// before the lapse, which must not be written over what the other replica wrote meanwhile
// (found by the attacker's review of the one status path).
func TestLapsedReplicaIsToldWhenItTakesAClusterBack(t *testing.T) {
	ctx := context.Background()
	c, clk := leaseStore(t)
	released := map[string][]types.NamespacedName{}
	onRelease := func(id string) func(types.NamespacedName) {
		return func(k types.NamespacedName) { released[id] = append(released[id], k) }
	}
	acquired := map[types.NamespacedName]int{}
	r1 := replica(c, clk, "r1")
	r1.OnRelease = onRelease("r1")
	r1.OnAcquire = func(k types.NamespacedName) { acquired[k]++ }
	var k types.NamespacedName
	for i := range 40 {
		if ownerOf([]string{"r1", "r3"}, key(i)) == "r1" {
			k = key(i)
			break
		}
	}
	r1.tick(ctx)
	if _, done, v := r1.enter(ctx, k); v != mine {
		t.Fatalf("r1 alone does not serve %s", k)
	} else {
		done()
	}
	r3 := replica(c, clk, "r3")
	r3.OnRelease = onRelease("r3")
	r3.tick(ctx)
	for range 6 { // r1 stalls for 12 s
		clk.t = clk.t.Add(2 * time.Second)
		r3.tick(ctx)
	}
	if _, done, v := r3.enter(ctx, k); v != mine {
		t.Fatalf("r3 did not take %s from the stalled r1", k)
	} else {
		done() // r3 writes k's status here
	}
	r1.tick(ctx) // r1 renews at last: lapse
	for range 3 {
		clk.t = clk.t.Add(2 * time.Second)
		r1.tick(ctx)
		r3.tick(ctx) // r3 sees r1 alive again and gives k back
	}
	var back bool
	for range 5 {
		if _, done, v := r1.enter(ctx, k); v == mine {
			done()
			back = true
			break
		}
		clk.t = clk.t.Add(time.Second)
		r1.tick(ctx)
	}
	if !back {
		t.Fatalf("r1 did not get %s back (released: %v)", k, released)
	}
	if acquired[k] != 2 {
		t.Fatalf("r1 serves %s again after r3 served it, told of %d acquisitions, want 2 (before and after the lapse)", k, acquired[k])
	}
}
