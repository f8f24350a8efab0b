package routekinds

import (
	"context"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/allocation"
	"github.com/shardgate/shardgate/pkg/names"
)

func route(ns string, parents []gatewayv1.ParentReference, hosts ...string) *gatewayv1.HTTPRoute {
	r := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Generation: 3}}
	r.Spec.ParentRefs = parents
	for _, h := range hosts {
		r.Spec.Hostnames = append(r.Spec.Hostnames, gatewayv1.Hostname(h))
	}
	return r
}

var (
	parentRef   = gatewayv1.ParentReference{Namespace: ptr.To(gatewayv1.Namespace(names.Namespace)), Name: names.ParentGatewayName}
	otherParent = gatewayv1.ParentReference{Name: "their-gateway"}
	// parentInOwnNamespace names the parent without a namespace: the route's own namespace.
	parentInOwnNamespace = gatewayv1.ParentReference{Name: names.ParentGatewayName}
	// parentAsService is a parentRef of another kind that happens to have the parent's name.
	parentAsService = gatewayv1.ParentReference{Kind: ptr.To(gatewayv1.Kind("Service")),
		Namespace: ptr.To(gatewayv1.Namespace(names.Namespace)), Name: names.ParentGatewayName}
)

// TestHTTPRouteServes: a route is Shardgate's when attached to the parent Gateway in Shardgate's
// namespace (written out), whatever else it is attached to; for the default class's flavour.
func TestHTTPRouteServes(t *testing.T) {
	serves, err := HTTPRoute{}.Serves(context.Background(), nil, &v1alpha1.ClusterIngressSpec{}, twoFlavours)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		r    *gatewayv1.HTTPRoute
		ours bool
	}{
		{"attached to the parent", route("team", []gatewayv1.ParentReference{parentRef}), true},
		{"to the parent and another Gateway", route("team", []gatewayv1.ParentReference{otherParent, parentRef}), true},
		{"to another Gateway only", route("team", []gatewayv1.ParentReference{otherParent}), false},
		{"to a same-named Gateway in its own namespace", route("team", []gatewayv1.ParentReference{parentInOwnNamespace}), false},
		{"to a Service named like the parent", route("team", []gatewayv1.ParentReference{parentAsService}), false},
		{"Shardgate's own namespace", route(names.Namespace, []gatewayv1.ParentReference{parentRef}), false},
	} {
		flavour, ours := serves(c.r)
		if ours != c.ours || ours && flavour != "traefik" {
			t.Errorf("%s: ours %v for %q, want %v", c.name, ours, flavour, c.ours)
		}
		if why := (HTTPRoute{}).ServedElsewhere(c.r, twoFlavours); (why == "") != slices.ContainsFunc(c.r.Spec.ParentRefs, isParent) {
			t.Errorf("%s: ServedElsewhere %q", c.name, why)
		}
	}
}

// TestHTTPRouteTell: an allocated route gets its default host when hostless, exactly its shard's
// Gateway beside what the user attached it to, and Shardgate's parent entry; moving replaces the
// shard Gateway; rejecting takes it and the routers' entries away; once told, AlreadySays.
func TestHTTPRouteTell(t *testing.T) {
	k := HTTPRoute{}
	label, _ := names.DefaultHostLabel("team", "web")
	host := label + ".c1.z.test"
	alloc := allocation.Allocation{Kind: "HTTPRoute", Namespace: "team", Name: "web", Shard: "default", Domain: "c1.z.test",
		Hosts: []string{host}}

	r := route("team", []gatewayv1.ParentReference{otherParent, parentRef})
	if k.AlreadySays(r, alloc) {
		t.Fatal("a new route already says its allocation")
	}
	told := tell(t, k, r, alloc)
	if !slices.Equal(told.Spec.Hostnames, []gatewayv1.Hostname{gatewayv1.Hostname(host)}) {
		t.Errorf("hostnames %v, want the default host %s", told.Spec.Hostnames, host)
	}
	if got := shardRefs(told); !slices.Equal(got, []string{"router-default"}) || !slices.ContainsFunc(told.Spec.ParentRefs, isParent) ||
		!slices.ContainsFunc(told.Spec.ParentRefs, func(p gatewayv1.ParentReference) bool { return p.Name == "their-gateway" }) {
		t.Errorf("parentRefs %+v: want the user's two and router-default", told.Spec.ParentRefs)
	}
	entry := parentEntry(told)
	if entry == nil || !meta.IsStatusConditionTrue(entry.Conditions, string(gatewayv1.RouteConditionAccepted)) ||
		entry.Conditions[0].ObservedGeneration != 3 {
		t.Fatalf("Shardgate's parent entry %+v, want Accepted at generation 3", entry)
	}
	if !k.AlreadySays(told, alloc) {
		t.Error("a told route does not already say its allocation: every pass would write it")
	}

	// The routers accept it for their Gateway; then it moves to shard edge.
	told.Status.Parents = append(told.Status.Parents, gatewayv1.RouteParentStatus{ControllerName: "traefik.io/gateway-controller",
		ParentRef: shardGatewayRef("default")})
	moved := alloc
	moved.Shard, moved.Domain, moved.Hosts = "edge", "edge.c1.z.test", []string{label + ".edge.c1.z.test"}
	m := tell(t, k, told, moved)
	if got := shardRefs(m); !slices.Equal(got, []string{"router-edge"}) || string(m.Spec.Hostnames[0]) != moved.Hosts[0] {
		t.Errorf("moved: shard Gateways %v, hostnames %v; want router-edge and %s", got, m.Spec.Hostnames, moved.Hosts[0])
	}

	rejected := allocation.Allocation{Kind: "HTTPRoute", Namespace: "team", Name: "web", Rejected: true, Reason: "host held"}
	x := tell(t, k, told, rejected)
	if got := shardRefs(x); len(got) != 0 {
		t.Errorf("rejected: still attached to %v", got)
	}
	if slices.ContainsFunc(x.Status.Parents, namesAShardGateway) {
		t.Errorf("rejected: the routers' entries stay %+v", x.Status.Parents)
	}
	if e := parentEntry(x); e == nil || meta.IsStatusConditionTrue(e.Conditions, string(gatewayv1.RouteConditionAccepted)) ||
		e.Conditions[0].Message != "host held" {
		t.Errorf("rejected: parent entry %+v, want Accepted False with the reason", e)
	}
	if !k.AlreadySays(x, rejected) {
		t.Error("a told rejected route does not already say so")
	}
}

func tell(t *testing.T, k HTTPRoute, r *gatewayv1.HTTPRoute, a allocation.Allocation) *gatewayv1.HTTPRoute {
	t.Helper()
	want, _ := k.Tell(r, a)
	w := want.(*gatewayv1.HTTPRoute)
	k.TellStatus(w, a)
	return w
}

func shardRefs(r *gatewayv1.HTTPRoute) []string {
	var out []string
	for _, p := range r.Spec.ParentRefs {
		if isShardGateway(p) {
			out = append(out, string(p.Name))
		}
	}
	return out
}

func parentEntry(r *gatewayv1.HTTPRoute) *gatewayv1.RouteParentStatus {
	for i, p := range r.Status.Parents {
		if p.ControllerName == ParentController {
			return &r.Status.Parents[i]
		}
	}
	return nil
}
