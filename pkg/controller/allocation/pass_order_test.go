package allocation

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

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

// TestAPassAttachesFirstAndWritesAtMostItsBudget: three hostless HTTPRoutes, two writes a pass.
// The first pass attaches two (marks and spec) and leaves every status for later; the second
// attaches the third before it tells any status; each pass that leaves writes asks for the next at
// once, and the one that leaves none does not. Out of time, a pass writes one route.
func TestAPassAttachesFirstAndWritesAtMostItsBudget(t *testing.T) {
	ctx := context.Background()
	route := func(name string) client.Object {
		return &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, UID: types.UID(name)},
			Spec: gatewayv1.HTTPRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{
				Namespace: ptr.To(gatewayv1.Namespace(names.Namespace)), Name: names.ParentGatewayName}}}}}
	}
	r, key, u := newKindsReconciler(t, nil, v1alpha1.AllocationSettings{}, routekinds.Registry{routekinds.HTTPRoute{}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, route("r1"), route("r2"), route("r3"))
	r.passWrites = 2
	state := func() (attached, told int) {
		t.Helper()
		for _, name := range []string{"r1", "r2", "r3"} {
			got := &gatewayv1.HTTPRoute{}
			must(t, u.Get(ctx, client.ObjectKey{Namespace: "team", Name: name}, got))
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
	passes(t, r, key, state, []passOutcome{{2, 0, true}, {3, 1, true}, {3, 3, false}, {3, 3, false}})

	// Out of time at once, a pass still writes one route.
	r, key, u = newKindsReconciler(t, nil, v1alpha1.AllocationSettings{}, routekinds.Registry{routekinds.HTTPRoute{}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, route("r1"), route("r2"), route("r3"))
	r.passTime = time.Nanosecond
	passes(t, r, key, state, []passOutcome{{1, 0, true}, {2, 0, true}, {3, 0, true}, {3, 1, true}, {3, 2, true},
		{3, 3, false}})
}

type passOutcome struct {
	attached, told int
	more           bool
}

// passes reconciles once per outcome and checks after each what state says and whether the pass
// asked for the next one at once.
func passes(t *testing.T, r *Reconciler, key types.NamespacedName, state func() (int, int), want []passOutcome) {
	t.Helper()
	for i, w := range want {
		res := controllertest.Reconcile(t, r, key, 1)
		attached, told := state()
		if got := fmt.Sprint(attached, told, res.RequeueAfter > 0); got != fmt.Sprint(w.attached, w.told, w.more) {
			t.Fatalf("after pass %d: attached, told, next pass asked for = %s; want %v %v %v", i+1, got, w.attached,
				w.told, w.more)
		}
	}
}
