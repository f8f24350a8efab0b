package allocation

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// TestReview37OneOwnerPerHostAcrossGatewayKinds (review37, held): an HTTPRoute of one namespace and
// a GRPCRoute of another for one host, both attached to the parent: only the older is allocated,
// whichever kind it is; the other is rejected and keeps no shard Gateway.
func TestReview37OneOwnerPerHostAcrossGatewayKinds(t *testing.T) {
	parent := gatewayv1.ParentReference{Namespace: ptr.To(gatewayv1.Namespace(names.Namespace)), Name: names.ParentGatewayName}
	host := []gatewayv1.Hostname{"shop.c1.z.test"}
	t0 := time.Now().Add(-time.Hour)
	for _, grpcFirst := range []bool{false, true} {
		httpAt, grpcAt := t0, t0.Add(time.Minute)
		if grpcFirst {
			httpAt, grpcAt = grpcAt, httpAt
		}
		h := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web", UID: "h", CreationTimestamp: metav1.NewTime(httpAt)},
			Spec: gatewayv1.HTTPRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{parent}}, Hostnames: host}}
		g := &gatewayv1.GRPCRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "web", UID: "g", CreationTimestamp: metav1.NewTime(grpcAt)},
			Spec: gatewayv1.GRPCRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{parent}}, Hostnames: host}}
		r, key, u := newKindsReconciler(t, nil, v1alpha1.AllocationSettings{}, routekinds.Builtin(),
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, h, g)
		for range 3 {
			if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
				t.Fatal(err)
			}
		}
		must(t, u.Get(context.Background(), client.ObjectKeyFromObject(h), h))
		must(t, u.Get(context.Background(), client.ObjectKeyFromObject(g), g))
		hOK := h.Annotations[v1alpha1.AllocationAnnotation] == v1alpha1.AllocationAllocated
		gOK := g.Annotations[v1alpha1.AllocationAnnotation] == v1alpha1.AllocationAllocated
		if hOK == gOK || hOK == grpcFirst || len(h.Spec.ParentRefs)+len(g.Spec.ParentRefs) != 3 {
			t.Errorf("grpc first %v: HTTPRoute %q %d parents, GRPCRoute %q %d parents", grpcFirst,
				h.Annotations[v1alpha1.AllocationAnnotation], len(h.Spec.ParentRefs), g.Annotations[v1alpha1.AllocationAnnotation], len(g.Spec.ParentRefs))
		}
	}
}
