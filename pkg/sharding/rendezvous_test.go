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

func TestLive(t *testing.T) {
	now := time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC)
	lease := func(holder string, renewed time.Duration, seconds int32) coordinationv1.Lease {
		return coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder),
			RenewTime: &metav1.MicroTime{Time: now.Add(-renewed)}, LeaseDurationSeconds: ptr.To(seconds)}}
	}
	got := Live([]coordinationv1.Lease{lease("b", time.Second, 10), lease("a", 9*time.Second, 10), lease("dead", 11*time.Second, 10),
		lease("", 0, 10), {Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("never-renewed")}}}, now)
	if fmt.Sprint(got) != "[a b]" {
		t.Fatalf("live %v", got)
	}
}
