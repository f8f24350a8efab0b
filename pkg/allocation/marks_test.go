package allocation

import (
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
)

// TestAlreadySays guards the fast path that skips writes: it may only skip an Ingress that shows
// the whole decision.
func TestAlreadySays(t *testing.T) {
	a := Allocation{Shard: "edge", Domain: "edge.c1.z", Hosts: []string{"web-ns.edge.c1.z"}}
	done := func() *networkingv1.Ingress {
		return &networkingv1.Ingress{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.ShardLabel: "edge"}, Annotations: map[string]string{
				v1alpha1.AllocationAnnotation: v1alpha1.AllocationAllocated, v1alpha1.ShardAnnotation: "edge",
				v1alpha1.HostsAnnotation: "web-ns.edge.c1.z"}},
			Spec:   networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "web-ns.edge.c1.z"}}},
			Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{Ingress: []networkingv1.IngressLoadBalancerIngress{{Hostname: "edge.c1.z"}}}},
		}
	}
	if !AlreadySays(done(), a) {
		t.Fatal("a fully written decision must be skipped")
	}
	for name, mutate := range map[string]func(*networkingv1.Ingress){
		"label missing":      func(i *networkingv1.Ingress) { delete(i.Labels, v1alpha1.ShardLabel) },
		"other shard":        func(i *networkingv1.Ingress) { i.Labels[v1alpha1.ShardLabel] = "default" },
		"no allocation yet":  func(i *networkingv1.Ingress) { delete(i.Annotations, v1alpha1.AllocationAnnotation) },
		"hosts differ":       func(i *networkingv1.Ingress) { i.Annotations[v1alpha1.HostsAnnotation] = "x" },
		"stale cname target": func(i *networkingv1.Ingress) { i.Annotations[v1alpha1.CNAMETargetAnnotation] = "old" },
		"default host unset": func(i *networkingv1.Ingress) { i.Spec.Rules[0].Host = "" },
		"hosts prefix only":  func(i *networkingv1.Ingress) { i.Annotations[v1alpha1.HostsAnnotation] = "web-ns.edge.c1.z,more" },
		"default backend without its rule": func(i *networkingv1.Ingress) {
			i.Spec.Rules = nil
			i.Spec.DefaultBackend = &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web"}}
		},
	} {
		ing := done()
		mutate(ing)
		if AlreadySays(ing, a) {
			t.Errorf("%s: skipped although the Ingress does not show the decision", name)
		}
	}
	rej := Allocation{Rejected: true, Reason: "wildcard host *.x is not allowed"}
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.AllocationAnnotation: "Rejected: wildcard host *.x is not allowed"}}}
	if !AlreadySays(ing, rej) {
		t.Error("a written rejection must be skipped")
	}
	ing.Labels = map[string]string{v1alpha1.ShardLabel: "edge"}
	if AlreadySays(ing, rej) {
		t.Error("a rejected Ingress still labelled for a shard must be rewritten")
	}
	ing.Labels = nil
	ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{Hostname: "edge.c1.z"}}
	if AlreadySays(ing, rej) {
		t.Error("a rejected Ingress still showing a shard's address must be rewritten")
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

// TestTell covers what an Ingress is made to say: the decision in labels and annotations,
// default hosts in empty rules, a rule for an Ingress that has only a default backend, and a
// rejection that takes the shard away.
func TestTell(t *testing.T) {
	backend := networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}
	a := Allocation{Shard: "edge", Domain: "edge.c1.z", Hosts: []string{"web-ns.edge.c1.z", "shop.example.org"}, CNAMETarget: "edge.c1.z"}
	ing := &networkingv1.Ingress{Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{}, {Host: "shop.example.org"}}}}
	got, changed := Tell(ing, a)
	if !changed || got.Labels[v1alpha1.ShardLabel] != "edge" || got.Annotations[v1alpha1.AllocationAnnotation] != v1alpha1.AllocationAllocated ||
		got.Annotations[v1alpha1.HostsAnnotation] != "web-ns.edge.c1.z,shop.example.org" || got.Annotations[v1alpha1.CNAMETargetAnnotation] != "edge.c1.z" ||
		got.Spec.Rules[0].Host != "web-ns.edge.c1.z" || got.Spec.Rules[1].Host != "shop.example.org" {
		t.Fatalf("allocated: changed=%v %+v %+v", changed, got.ObjectMeta, got.Spec.Rules)
	}
	if ing.Labels != nil || ing.Spec.Rules[0].Host != "" {
		t.Fatal("tell changed its input")
	}
	if _, again := Tell(got, a); again {
		t.Error("telling the same decision twice must change nothing")
	}

	only := &networkingv1.Ingress{Spec: networkingv1.IngressSpec{DefaultBackend: &backend}}
	got, _ = Tell(only, Allocation{Shard: "edge", Domain: "edge.c1.z", Hosts: []string{"web-ns.edge.c1.z"}})
	if len(got.Spec.Rules) != 1 || got.Spec.Rules[0].Host != "web-ns.edge.c1.z" || got.Spec.Rules[0].HTTP == nil ||
		got.Spec.Rules[0].HTTP.Paths[0].Path != "/" || got.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name != "web" {
		t.Errorf("default-backend Ingress: rules %+v", got.Spec.Rules)
	}

	rej := Allocation{Rejected: true, Reason: "host taken"}
	got, changed = Tell(got, rej)
	if !changed || got.Labels[v1alpha1.ShardLabel] != "" || got.Annotations[v1alpha1.ShardAnnotation] != "" ||
		got.Annotations[v1alpha1.HostsAnnotation] != "" || got.Annotations[v1alpha1.AllocationAnnotation] != "Rejected: host taken" {
		t.Errorf("rejected: %+v", got.ObjectMeta)
	}
}

// TestUntell: an Ingress that moved to another class loses exactly Shardgate's label and
// annotations; the user's own metadata and its hosts stay.
func TestUntell(t *testing.T) {
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{
			Labels: map[string]string{v1alpha1.ShardLabel: "edge", "app": "web"},
			Annotations: map[string]string{v1alpha1.AllocationAnnotation: v1alpha1.AllocationAllocated, v1alpha1.ShardAnnotation: "edge",
				v1alpha1.HostsAnnotation: "web-ns.edge.c1.z", v1alpha1.CNAMETargetAnnotation: "edge.c1.z", "team": "a"},
		},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "web-ns.edge.c1.z"}}},
	}
	if !CarriesAllocation(ing) {
		t.Fatal("an allocated Ingress carries the allocation")
	}
	got := Untell(ing)
	if CarriesAllocation(got) {
		t.Fatalf("still carries the allocation: %+v", got.ObjectMeta)
	}
	if got.Labels["app"] != "web" || got.Annotations["team"] != "a" || got.Spec.Rules[0].Host != "web-ns.edge.c1.z" {
		t.Errorf("user metadata or hosts lost: %+v %+v", got.ObjectMeta, got.Spec.Rules)
	}
	if ing.Labels[v1alpha1.ShardLabel] != "edge" {
		t.Error("untell changed its input")
	}
	only := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.AllocationAnnotation: "Rejected: x"}}}
	if !CarriesAllocation(only) {
		t.Error("a rejection annotation alone is Shardgate's too")
	}
	if CarriesAllocation(&networkingv1.Ingress{}) {
		t.Error("a plain Ingress carries nothing")
	}
}

// TestTellRewritesAMovedDefaultHost: an Ingress whose default host was given under one shard's
// domain gets the new one when it moves (an IngressClaim bound it, or its claim went); a host the
// user wrote is never touched.
func TestTellRewritesAMovedDefaultHost(t *testing.T) {
	label, _ := names.DefaultHostLabel("team", "web")
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web"}, Spec: networkingv1.IngressSpec{
		Rules: []networkingv1.IngressRule{{Host: label + ".c1.z.test"}, {Host: "shop.example.org"}}}}
	want, changed := Tell(ing, Allocation{Namespace: "team", Name: "web", Shard: "mine-team", Domain: "mine-team.c1.z.test",
		Hosts: []string{label + ".mine-team.c1.z.test", "shop.example.org"}, CNAMETarget: "mine-team.c1.z.test"})
	if !changed || want.Spec.Rules[0].Host != label+".mine-team.c1.z.test" || want.Spec.Rules[1].Host != "shop.example.org" {
		t.Errorf("changed %v, hosts %s, %s", changed, want.Spec.Rules[0].Host, want.Spec.Rules[1].Host)
	}
}
