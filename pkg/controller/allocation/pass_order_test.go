package allocation

import (
	"context"
	"maps"
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
		told    []bool
		want    []int
	}{
		{"nothing to write", []change{settled, settled}, nil, nil},
		{"marks in the plan's order", []change{marks, settled, marks}, nil, []int{0, 2}},
		{"every change of marks before any of status alone", []change{statusOnly, marks, statusOnly, marks}, nil,
			[]int{1, 3, 0, 2}},
		{"status alone", []change{statusOnly, settled, statusOnly}, nil, []int{0, 2}},
		{"statuses told lately after the others", []change{statusOnly, statusOnly, marks, statusOnly},
			[]bool{true, false, true, false}, []int{2, 1, 3, 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			told := c.told
			if told == nil {
				told = make([]bool, len(c.changes))
			}
			if got := passOrder(c.changes, told); !slices.Equal(got, c.want) {
				t.Errorf("passOrder(%v, %v) = %v, want %v", c.changes, told, got, c.want)
			}
		})
	}
}

// TestStatusRound: a route whose status the round told is told lately; a round in which every
// status left was told starts anew.
func TestStatusRound(t *testing.T) {
	a, b, c := tenantHTTPRoute("a"), tenantHTTPRoute("b"), tenantHTTPRoute("c")
	targets := []client.Object{a, b, c}
	for _, tc := range []struct {
		name      string
		round     statusRound
		changes   []change
		want      []bool
		roundKept bool
	}{
		{"no round", nil, []change{statusOnly, statusOnly, marks}, []bool{false, false, false}, false},
		{"told lately", statusRound{"a": true, "c": true}, []change{statusOnly, statusOnly, statusOnly},
			[]bool{true, false, true}, true},
		{"marks are never told lately", statusRound{"a": true, "c": true}, []change{statusOnly, statusOnly, marks},
			[]bool{true, false, false}, true},
		{"every status left told: a new round", statusRound{"a": true, "b": true}, []change{statusOnly, statusOnly, marks},
			[]bool{false, false, false}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			told, round := tc.round.toldOf(tc.changes, targets)
			if !slices.Equal(told, tc.want) || (round != nil) != tc.roundKept {
				t.Errorf("toldOf = %v, round kept %v; want %v, %v", told, round != nil, tc.want, tc.roundKept)
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

// TestNextStatusRound: a pass that told every status ends the round; one that yielded keeps the
// round's routes that still exist and adds those it told.
func TestNextStatusRound(t *testing.T) {
	live := func(uids ...types.UID) func(func(types.UID) bool) { return slices.Values(uids) }
	for _, c := range []struct {
		name    string
		round   statusRound
		yielded bool
		told    []types.UID
		live    []types.UID
		want    statusRound
	}{
		{"told every status: no round", statusRound{"a": true}, false, []types.UID{"b"}, []types.UID{"a", "b"}, nil},
		{"yielded: the round and the told", statusRound{"a": true}, true, []types.UID{"b"}, []types.UID{"a", "b", "c"},
			statusRound{"a": true, "b": true}},
		{"a deleted route leaves the round", statusRound{"a": true, "gone": true}, true, []types.UID{"b"},
			[]types.UID{"a", "b"}, statusRound{"a": true, "b": true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := c.round.next(c.yielded, c.told, live(c.live...))
			if !maps.Equal(got, c.want) || (got == nil) != (c.want == nil) {
				t.Errorf("next = %v, want %v", got, c.want)
			}
		})
	}
}
