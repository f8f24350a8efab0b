package sharding

import (
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func keys(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("tenant-%d/cluster-%d", i%37, i))
	}
	return out
}

func TestOwnerSpreadsAndMovesOnlyTheShare(t *testing.T) {
	three := []string{"r-a", "r-b", "r-c"}
	before := map[string]string{}
	count := map[string]int{}
	for _, k := range keys(3000) {
		o := Owner(three, k)
		before[k] = o
		count[o]++
	}
	for _, r := range three {
		if count[r] < 850 || count[r] > 1150 {
			t.Fatalf("uneven spread: %v", count)
		}
	}
	// r-b leaves: only its clusters move, and they spread over the other two.
	moved := map[string]int{}
	for _, k := range keys(3000) {
		o := Owner([]string{"r-a", "r-c"}, k)
		if before[k] != "r-b" && o != before[k] {
			t.Fatalf("%s moved from %s to %s though its replica stayed", k, before[k], o)
		}
		if before[k] == "r-b" {
			moved[o]++
		}
	}
	if moved["r-a"] < 350 || moved["r-c"] < 350 {
		t.Fatalf("r-b's share went unevenly: %v", moved)
	}
	// r-d joins: it takes about a quarter, only from the others.
	took := 0
	for _, k := range keys(3000) {
		o := Owner([]string{"r-a", "r-b", "r-c", "r-d"}, k)
		if o != before[k] {
			if o != "r-d" {
				t.Fatalf("%s moved between staying replicas", k)
			}
			took++
		}
	}
	if took < 600 || took > 900 {
		t.Fatalf("the new replica took %d of 3000", took)
	}
	if Owner(nil, "x") != "" || Owner([]string{"only"}, "x") != "only" {
		t.Fatal("degenerate sets")
	}
	// Order of the replica list does not matter.
	if Owner([]string{"r-c", "r-a", "r-b"}, "k") != Owner(three, "k") {
		t.Fatal("order-dependent")
	}
}

// Liveness follows what this replica observed: a Lease is gone once it has not changed for its
// duration here, whatever renewTime its writer's clock put in it.
func TestObserverLive(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC)
	lease := func(name, holder string, renewed time.Time, seconds int32) coordinationv1.Lease {
		return coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder),
			RenewTime: &metav1.MicroTime{Time: renewed}, LeaseDurationSeconds: ptr.To(seconds)}}
	}
	var o Observer
	live := func(now time.Time, leases ...coordinationv1.Lease) string {
		o.Observe(leases, now)
		return fmt.Sprint(o.Live(leases, now))
	}
	// First sight: every Lease naming a holder counts live for its duration, even one whose
	// renewTime is an hour old (its writer's clock, or the seed was away): it gets time to renew.
	a, b := lease("ra", "a", t0, 10), lease("rb", "b", t0.Add(-time.Hour), 10)
	released, never := lease("rc", "", t0, 10), coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "rd"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("d")}}
	if got := live(t0, a, b, released, never); got != "[a b]" {
		t.Fatalf("first sight: live %v", got)
	}
	// a renews, b does not: 10 s after b was first seen unchanged, b is gone; a is not.
	a2 := lease("ra", "a", t0.Add(8*time.Second), 10)
	if got := live(t0.Add(9*time.Second), a2, b); got != "[a b]" {
		t.Fatalf("at 9 s: live %v", got)
	}
	if got := live(t0.Add(10*time.Second), a2, b); got != "[a]" {
		t.Fatalf("at 10 s: live %v", got)
	}
	// a renewed at 8 s as written, but observed at 9 s: live until 19 s.
	if got := live(t0.Add(18*time.Second), a2); got != "[a]" {
		t.Fatalf("at 18 s: live %v", got)
	}
	if got := live(t0.Add(19*time.Second), a2); got != "[]" {
		t.Fatalf("at 19 s: live %v", got)
	}
	// b renews again: live at once. A Lease deleted and created again is seen anew.
	if got := live(t0.Add(20*time.Second), lease("rb", "b", t0.Add(20*time.Second), 10)); got != "[b]" {
		t.Fatalf("b renewed: live %v", got)
	}
}
