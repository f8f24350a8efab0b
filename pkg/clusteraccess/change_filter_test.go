package clusteraccess

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/pkg/routekinds"
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

// TestRoutesWakeTheShardControllerOnlyWhereAListenerSetIs: a ListenerSet is ChangeListeners; a
// route's change is too, but only in a namespace that has a ListenerSet (its allocation decides
// which shard's Gateway takes the listeners), so a burst of routes elsewhere does not re-render
// any shard; a deleted ListenerSet stops it, also when its final state was not seen.
func TestRoutesWakeTheShardControllerOnlyWhereAListenerSetIs(t *testing.T) {
	routes := routekinds.Registry{routekinds.Ingress{}, routekinds.HTTPRoute{}}
	if got := changeOf(&gatewayv1.ListenerSet{}, routes); got != ChangeListeners {
		t.Fatalf("a ListenerSet is %b, want ChangeListeners", got)
	}
	if got := changeOf(&gatewayv1.HTTPRoute{}, routes); got != ChangeRoutes {
		t.Fatalf("an HTTPRoute is %b, want ChangeRoutes", got)
	}
	var l listenerNamespaces
	set := &gatewayv1.ListenerSet{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "s"}}
	l.count(ChangeListeners, set, 1)
	l.count(ChangeRoutes, &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "b"}}, 1) // not counted
	in := func(ns string) *networkingv1.Ingress {
		return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns}}
	}
	if l.change(ChangeRoutes, in("a")) != ChangeListeners || l.change(ChangeRoutes, in("b")) != 0 {
		t.Error("a route wakes the shard controller in a ListenerSet's namespace only")
	}
	if l.change(ChangeManaged, in("a")) != 0 {
		t.Error("a managed object's change is not a route's")
	}
	l.count(ChangeListeners, toolscache.DeletedFinalStateUnknown{Key: "a/s", Obj: set}, -1)
	if l.change(ChangeRoutes, in("a")) != 0 {
		t.Error("a namespace whose last ListenerSet went still wakes the shard controller")
	}
}
