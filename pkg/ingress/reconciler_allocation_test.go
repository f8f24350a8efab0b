package ingress

import (
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
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
	if !alreadySays(done(), a) {
		t.Fatal("a fully written decision must be skipped")
	}
	for name, mutate := range map[string]func(*networkingv1.Ingress){
		"label missing":       func(i *networkingv1.Ingress) { delete(i.Labels, v1alpha1.ShardLabel) },
		"other shard":         func(i *networkingv1.Ingress) { i.Labels[v1alpha1.ShardLabel] = "default" },
		"no allocation yet":   func(i *networkingv1.Ingress) { delete(i.Annotations, v1alpha1.AllocationAnnotation) },
		"hosts differ":        func(i *networkingv1.Ingress) { i.Annotations[v1alpha1.HostsAnnotation] = "x" },
		"stale cname target":  func(i *networkingv1.Ingress) { i.Annotations[v1alpha1.CNAMETargetAnnotation] = "old" },
		"default host unset":  func(i *networkingv1.Ingress) { i.Spec.Rules[0].Host = "" },
		"address missing":     func(i *networkingv1.Ingress) { i.Status.LoadBalancer.Ingress = nil },
		"address of a router": func(i *networkingv1.Ingress) { i.Status.LoadBalancer.Ingress[0].IP = "10.0.0.1" },
	} {
		ing := done()
		mutate(ing)
		if alreadySays(ing, a) {
			t.Errorf("%s: skipped although the Ingress does not show the decision", name)
		}
	}
	rej := Allocation{Rejected: true, Reason: "wildcard host *.x is not allowed"}
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.AllocationAnnotation: "Rejected: wildcard host *.x is not allowed"}}}
	if !alreadySays(ing, rej) {
		t.Error("a written rejection must be skipped")
	}
	ing.Labels = map[string]string{v1alpha1.ShardLabel: "edge"}
	if alreadySays(ing, rej) {
		t.Error("a rejected Ingress still labelled for a shard must be rewritten")
	}
}
