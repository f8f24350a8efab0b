package replicas

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
// duration here, whatever renewTime its writer's clock put in it; a gap in the observations
// gives the replicas that were live when sight was lost a full duration again.
func TestObserverLive(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	lease := func(name, holder string, renewed time.Time) coordinationv1.Lease {
		return coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder),
			RenewTime: &metav1.MicroTime{Time: renewed}, LeaseDurationSeconds: ptr.To(int32(10))}}
	}
	var o Observer
	live := func(s int, leases ...coordinationv1.Lease) string {
		o.Observe(leases, at(s))
		return fmt.Sprint(o.Live(leases, at(s)))
	}
	// First sight: every Lease naming a holder counts live for its duration, even one whose
	// renewTime is an hour old (its writer's clock, or the seed was away): it gets time to renew.
	a0, b := lease("ra", "a", at(0)), lease("rb", "b", t0.Add(-time.Hour))
	released, never := lease("rc", "", at(0)), coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "rd"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("d")}}
	if got := live(0, a0, b, released, never); got != "[a b]" {
		t.Fatalf("first sight: live %v", got)
	}
	// Listed every 3 s: a renews at 8 s as written (seen at 9 s), b never.
	a8 := lease("ra", "a", at(8))
	for _, step := range []struct {
		s    int
		a    coordinationv1.Lease
		want string
	}{{3, a0, "[a b]"}, {6, a0, "[a b]"}, {9, a8, "[a b]"}, {10, a8, "[a]"}, {13, a8, "[a]"}, {16, a8, "[a]"}, {18, a8, "[a]"}, {19, a8, "[]"}} {
		if got := live(step.s, step.a, b); got != step.want {
			t.Fatalf("at %d s: live %v, want %v", step.s, got, step.want)
		}
	}
	// Sight lost from 19 s to 40 s. a was gone before (expired at 19 s) and stays gone; b renews
	// and is live at once.
	if got := live(40, a8, lease("rb", "b", at(39))); got != "[b]" {
		t.Fatalf("after the gap: live %v", got)
	}

	// a and c both live; sight lost from 6 s to 25 s: both were live when it was lost, so both get
	// ten seconds from 25 s although neither renewed since.
	o = Observer{}
	c := lease("rc", "c", at(0))
	live(0, a0, c)
	live(3, a0, c)
	if got := live(6, lease("ra", "a", at(5)), c); got != "[a c]" {
		t.Fatalf("at 6 s: live %v", got)
	}
	if got := live(25, lease("ra", "a", at(5)), c); got != "[a c]" {
		t.Fatalf("after the gap: live %v", got)
	}
	for _, s := range []int{28, 31, 34} {
		if got := live(s, lease("ra", "a", at(5)), c); got != "[a c]" {
			t.Fatalf("%d s after the gap: live %v", s-25, got)
		}
	}
	if got := live(35, lease("ra", "a", at(5)), c); got != "[]" {
		t.Fatalf("10 s after the gap: live %v", got)
	}
}
