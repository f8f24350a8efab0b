package allocation

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// The kinds' own marks (hosts filled in, addresses) are tested with their adapters
// (pkg/routekinds); these are the marks every kind shares.

// TestMetaSays guards the metadata half of the fast path that skips writes.
func TestMetaSays(t *testing.T) {
	a := Allocation{Shard: "edge", Domain: "edge.c1.z", Hosts: []string{"web-ns.edge.c1.z"}}
	done := func() *metav1.ObjectMeta {
		return &metav1.ObjectMeta{Labels: map[string]string{v1alpha1.ShardLabel: "edge"}, Annotations: map[string]string{
			v1alpha1.AllocationAnnotation: v1alpha1.AllocationAllocated, v1alpha1.ShardAnnotation: "edge",
			v1alpha1.HostsAnnotation: "web-ns.edge.c1.z"}}
	}
	if !MetaSays(done(), a) {
		t.Fatal("a fully written decision must be skipped")
	}
	for name, mutate := range map[string]func(*metav1.ObjectMeta){
		"label missing":      func(m *metav1.ObjectMeta) { delete(m.Labels, v1alpha1.ShardLabel) },
		"other shard":        func(m *metav1.ObjectMeta) { m.Labels[v1alpha1.ShardLabel] = "default" },
		"no allocation yet":  func(m *metav1.ObjectMeta) { delete(m.Annotations, v1alpha1.AllocationAnnotation) },
		"hosts differ":       func(m *metav1.ObjectMeta) { m.Annotations[v1alpha1.HostsAnnotation] = "x" },
		"stale cname target": func(m *metav1.ObjectMeta) { m.Annotations[v1alpha1.CNAMETargetAnnotation] = "old" },
		"hosts prefix only":  func(m *metav1.ObjectMeta) { m.Annotations[v1alpha1.HostsAnnotation] = "web-ns.edge.c1.z,more" },
		"stale route class":  func(m *metav1.ObjectMeta) { m.Annotations[v1alpha1.ShardClassAnnotation] = "shardgate-shard-old" },
	} {
		m := done()
		mutate(m)
		if MetaSays(m, a) {
			t.Errorf("%s: skipped although the route does not show the decision", name)
		}
	}
	rej := Allocation{Rejected: true, Reason: "wildcard host *.x is not allowed"}
	m := &metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.AllocationAnnotation: "Rejected: wildcard host *.x is not allowed"}}
	if !MetaSays(m, rej) {
		t.Error("a written rejection must be skipped")
	}
	m.Labels = map[string]string{v1alpha1.ShardLabel: "edge"}
	if MetaSays(m, rej) {
		t.Error("a rejected route still labelled for a shard must be rewritten")
	}
}

// TestTellMeta: the decision in labels and annotations; a rejection takes the shard away.
func TestTellMeta(t *testing.T) {
	m := &metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.CNAMETargetAnnotation: "old", "team": "a"}}
	a := Allocation{Shard: "edge", Domain: "edge.c1.z", Hosts: []string{"web-ns.edge.c1.z", "shop.example.org"}, CNAMETarget: "edge.c1.z"}
	TellMeta(m, a)
	if m.Labels[v1alpha1.ShardLabel] != "edge" || m.Annotations[v1alpha1.AllocationAnnotation] != v1alpha1.AllocationAllocated ||
		m.Annotations[v1alpha1.HostsAnnotation] != "web-ns.edge.c1.z,shop.example.org" ||
		m.Annotations[v1alpha1.CNAMETargetAnnotation] != "edge.c1.z" || m.Annotations["team"] != "a" || !MetaSays(m, a) {
		t.Fatalf("allocated: %+v", m)
	}
	TellMeta(m, Allocation{Shard: "heavy", Hosts: []string{"web-ns.heavy.c1.z"}, RouteClass: "shardgate-shard-heavy"})
	if _, ok := m.Annotations[v1alpha1.CNAMETargetAnnotation]; ok {
		t.Error("a CNAME target without custom hosts stayed")
	}
	if m.Annotations[v1alpha1.ShardClassAnnotation] != "shardgate-shard-heavy" {
		t.Errorf("allocated to a shard that selects by class annotation: %+v", m)
	}
	TellMeta(m, Allocation{Shard: "edge", Hosts: []string{"web-ns.edge.c1.z"}})
	if _, ok := m.Annotations[v1alpha1.ShardClassAnnotation]; ok {
		t.Error("the route class stayed on a route moved to a shard that selects by label")
	}
	TellMeta(m, Allocation{Shard: "heavy", Hosts: []string{"web-ns.heavy.c1.z"}, RouteClass: "shardgate-shard-heavy"})
	TellMeta(m, Allocation{Rejected: true, Reason: "host taken"})
	if m.Labels[v1alpha1.ShardLabel] != "" || m.Annotations[v1alpha1.ShardAnnotation] != "" || m.Annotations[v1alpha1.HostsAnnotation] != "" ||
		m.Annotations[v1alpha1.ShardClassAnnotation] != "" ||
		m.Annotations[v1alpha1.AllocationAnnotation] != "Rejected: host taken" || m.Annotations["team"] != "a" {
		t.Errorf("rejected: %+v", m)
	}
}

// TestUntell: a route let go of loses exactly Shardgate's label and annotations; the user's own
// metadata stays.
func TestUntell(t *testing.T) {
	m := &metav1.ObjectMeta{
		Labels: map[string]string{v1alpha1.ShardLabel: "edge", "app": "web"},
		Annotations: map[string]string{v1alpha1.AllocationAnnotation: v1alpha1.AllocationAllocated, v1alpha1.ShardAnnotation: "edge",
			v1alpha1.HostsAnnotation: "web-ns.edge.c1.z", v1alpha1.CNAMETargetAnnotation: "edge.c1.z", "team": "a"},
	}
	if !CarriesAllocation(m) {
		t.Fatal("an allocated route carries the allocation")
	}
	Untell(m)
	if CarriesAllocation(m) {
		t.Fatalf("still carries the allocation: %+v", m)
	}
	if m.Labels["app"] != "web" || m.Annotations["team"] != "a" {
		t.Errorf("user metadata lost: %+v", m)
	}
	if !CarriesAllocation(&metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.AllocationAnnotation: "Rejected: x"}}) {
		t.Error("a rejection annotation alone is Shardgate's too")
	}
	if CarriesAllocation(&metav1.ObjectMeta{}) {
		t.Error("a plain route carries nothing")
	}
}

// TestHeld: only Shardgate's own allocation annotation makes a shard label and hosts count.
func TestHeld(t *testing.T) {
	for _, c := range []struct {
		name  string
		meta  metav1.ObjectMeta
		shard string
		hosts []string
	}{
		{"allocated", metav1.ObjectMeta{Labels: map[string]string{v1alpha1.ShardLabel: "edge"}, Annotations: map[string]string{
			v1alpha1.AllocationAnnotation: v1alpha1.AllocationAllocated, v1alpha1.HostsAnnotation: "a.edge.c1.z,b.example.org"}},
			"edge", []string{"a.edge.c1.z", "b.example.org"}},
		{"allocated, no hosts", metav1.ObjectMeta{Labels: map[string]string{v1alpha1.ShardLabel: "edge"}, Annotations: map[string]string{
			v1alpha1.AllocationAnnotation: v1alpha1.AllocationAllocated}}, "edge", nil},
		{"a label alone", metav1.ObjectMeta{Labels: map[string]string{v1alpha1.ShardLabel: "edge"}}, "", nil},
		{"rejected", metav1.ObjectMeta{Labels: map[string]string{v1alpha1.ShardLabel: "edge"}, Annotations: map[string]string{
			v1alpha1.AllocationAnnotation: "Rejected: x", v1alpha1.HostsAnnotation: "a.edge.c1.z"}}, "", nil},
	} {
		shard, hosts := Held(&c.meta)
		if shard != c.shard || !slices.Equal(hosts, c.hosts) {
			t.Errorf("%s: %q %q, want %q %q", c.name, shard, hosts, c.shard, c.hosts)
		}
	}
}

func TestJoinedEquals(t *testing.T) {
	for _, c := range []struct {
		s     string
		parts []string
		want  bool
	}{
		{"", nil, true}, {"", []string{""}, true}, {"a", nil, false}, {"a", []string{"a"}, true},
		{"a,b", []string{"a", "b"}, true}, {"a,b", []string{"a"}, false}, {"a", []string{"a", "b"}, false},
		{"ab", []string{"a", "b"}, false}, {"a,bc", []string{"a", "b"}, false}, {"a,,b", []string{"a", "", "b"}, true},
	} {
		if got := joinedEquals(c.s, c.parts); got != c.want || got != (c.s == strings.Join(c.parts, ",")) {
			t.Errorf("joinedEquals(%q, %q) = %v, want %v", c.s, c.parts, got, c.want)
		}
	}
}
