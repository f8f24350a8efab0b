package allocation

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

func TestPassOrder(t *testing.T) {
	for _, c := range []struct {
		name    string
		changes []change
		want    []int
	}{
		{"nothing to write", []change{settled, settled}, nil},
		{"marks in the plan's order", []change{marks, settled, marks}, []int{0, 2}},
		{"every change of marks before any of status alone", []change{statusOnly, marks, statusOnly, marks},
			[]int{1, 3, 0, 2}},
		{"status alone", []change{statusOnly, settled, statusOnly}, []int{0, 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := passOrder(c.changes); !slices.Equal(got, c.want) {
				t.Errorf("passOrder(%v) = %v, want %v", c.changes, got, c.want)
			}
		})
	}
}

// TestAPassAttachesBeforeItTells: three hostless HTTPRoutes. The first pass attaches them all
// (marks and spec) and tells no status; the second tells every status; then nothing changes.
func TestAPassAttachesBeforeItTells(t *testing.T) {
	routes := []string{"r1", "r2", "r3"}
	objs := []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}}
	for _, name := range routes {
		objs = append(objs, tenantHTTPRoute(name))
	}
	r, key, u := newKindsReconciler(t, nil, v1alpha1.AllocationSettings{}, routekinds.Registry{routekinds.HTTPRoute{}}, objs...)
	for i, want := range [][2]int{{3, 0}, {3, 3}, {3, 3}} {
		controllertest.Reconcile(t, r, key, 1)
		if attached, told := attachedAndTold(t, u, routes); attached != want[0] || told != want[1] {
			t.Fatalf("after pass %d: %d attached, %d told; want %d and %d", i+1, attached, told, want[0], want[1])
		}
	}
}

// tenantHTTPRoute is a hostless HTTPRoute of namespace team attached to the parent Gateway.
func tenantHTTPRoute(name string) client.Object {
	return &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, UID: types.UID(name)},
		Spec: gatewayv1.HTTPRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{
			Namespace: ptr.To(gatewayv1.Namespace(names.Namespace)), Name: names.ParentGatewayName}}}}}
}

// attachedAndTold counts the HTTPRoutes of namespace team named routes that are attached to shard
// default with a default host, and those whose status has Shardgate's parent entry.
func attachedAndTold(t *testing.T, u client.Client, routes []string) (attached, told int) {
	t.Helper()
	for _, name := range routes {
		got := &gatewayv1.HTTPRoute{}
		must(t, u.Get(context.Background(), client.ObjectKey{Namespace: "team", Name: name}, got))
		if got.Labels[v1alpha1.ShardLabel] == "default" && len(got.Spec.Hostnames) == 1 {
			attached++
		}
		if slices.ContainsFunc(got.Status.Parents, func(p gatewayv1.RouteParentStatus) bool {
			return p.ControllerName == routekinds.ParentController
		}) {
			told++
		}
	}
	return attached, told
}
