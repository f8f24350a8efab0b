package clusteraccess

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestStatusOnly: only updates that cannot change an allocation are filtered out.
func TestStatusOnly(t *testing.T) {
	base := func() *networkingv1.Ingress {
		return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Generation: 3, Labels: map[string]string{"a": "1"}, Annotations: map[string]string{"b": "2"}}}
	}
	withStatus := base()
	withStatus.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{Hostname: "edge.c1.z"}}
	if !statusOnly(base(), withStatus) {
		t.Error("a status-only update must be filtered")
	}
	now := metav1.Now()
	for name, mutate := range map[string]func(*networkingv1.Ingress){
		"spec (generation)": func(i *networkingv1.Ingress) { i.Generation++ },
		"label":             func(i *networkingv1.Ingress) { i.Labels["a"] = "x" },
		"annotation gone":   func(i *networkingv1.Ingress) { delete(i.Annotations, "b") },
		"deleting":          func(i *networkingv1.Ingress) { i.DeletionTimestamp = &now },
	} {
		n := base()
		mutate(n)
		if statusOnly(base(), n) {
			t.Errorf("%s: filtered, but it can change the allocation", name)
		}
	}
	// Namespaces have no generation: every update counts (their labels feed namespaceSelectors).
	ns := &corev1.Namespace{}
	if statusOnly(ns, ns.DeepCopy()) {
		t.Error("objects without a generation must never be filtered")
	}
	if statusOnly("not an object", base()) {
		t.Error("unknown objects must never be filtered")
	}
}
