package routekinds

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/allocation"
	"github.com/shardgate/shardgate/pkg/gatewayapi"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/watchcache"
)

// HTTPRoute is Gateway API's gateway.networking.k8s.io/v1 HTTPRoute: Shardgate's when it is
// attached to the parent Gateway (names.ParentGatewayName in names.Namespace), whatever else it is
// attached to; its hostnames are its hosts (one default host when it has none); allocation adds
// the shard's Gateway (names.ShardGatewayName) to its parentRefs, which is what makes that shard's
// routers serve it, and the routers say so among status.parents.
type HTTPRoute struct{}

var _ Kind = HTTPRoute{}

// Name implements Kind.
func (HTTPRoute) Name() string { return "HTTPRoute" }

// GroupVersionKind implements Kind.
func (HTTPRoute) GroupVersionKind() schema.GroupVersionKind {
	return gatewayapi.GroupVersion.WithKind("HTTPRoute")
}

// Resource implements Kind.
func (HTTPRoute) Resource() string { return "httproutes" }

// ShortNames implements Kind: Gateway API defines none.
func (HTTPRoute) ShortNames() []string { return nil }

// AddToScheme implements Kind: the standard channel's v1 types.
func (HTTPRoute) AddToScheme(s *runtime.Scheme) error { return gatewayv1.Install(s) }

// New implements Kind.
func (HTTPRoute) New() client.Object { return &gatewayv1.HTTPRoute{} }

// NewList implements Kind.
func (HTTPRoute) NewList() client.ObjectList { return &gatewayv1.HTTPRouteList{} }

// Items implements Kind.
func (HTTPRoute) Items(list client.ObjectList) []client.Object {
	l := list.(*gatewayv1.HTTPRouteList)
	out := make([]client.Object, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out
}

// Cached implements Kind: every HTTPRoute, and every ListenerSet (the listeners tenants ask for
// their hosts: pkg/listenersets). Which Gateways exist is not read: a route is Shardgate's by its
// parentRef alone.
func (HTTPRoute) Cached() []Cached {
	return []Cached{{Object: &gatewayv1.HTTPRoute{}, Transform: trimHTTPRoute},
		{Object: &gatewayv1.ListenerSet{}, Transform: trimListenerSet}}
}

// trimListenerSet keeps of a ListenerSet its identity, spec and status (what Shardgate compares
// before it writes status).
func trimListenerSet(obj any) (any, error) {
	s, ok := obj.(*gatewayv1.ListenerSet)
	if !ok {
		return obj, nil
	}
	return &gatewayv1.ListenerSet{ObjectMeta: watchcache.TrimMeta(s.ObjectMeta, nil), Spec: s.Spec, Status: s.Status}, nil
}

// trimHTTPRoute keeps of a user's HTTPRoute its identity, labels, Shardgate's annotations, spec and
// status. Shardgate's own (its namespace) stay whole.
func trimHTTPRoute(obj any) (any, error) {
	r, ok := obj.(*gatewayv1.HTTPRoute)
	if !ok || r.Namespace == names.Namespace {
		return obj, nil
	}
	return &gatewayv1.HTTPRoute{ObjectMeta: watchcache.TrimMeta(r.ObjectMeta, v1alpha1.AllocationAnnotations),
		Spec: r.Spec, Status: r.Status}, nil
}

// Serves implements Kind: an HTTPRoute attached to the parent Gateway, for the flavour of the
// cluster's default class (the first shard's): the parent is one per cluster, not per flavour.
func (HTTPRoute) Serves(_ context.Context, _ client.Reader, _ *v1alpha1.ClusterIngressSpec, flavours Flavours,
) (func(client.Object) (string, bool), error) {
	flavour := flavours.ByIngressClass[flavours.DefaultIngressClass]
	return func(route client.Object) (string, bool) {
		r := route.(*gatewayv1.HTTPRoute)
		return flavour, r.Namespace != names.Namespace && slices.ContainsFunc(r.Spec.ParentRefs, isParent)
	}, nil
}

// ServedElsewhere implements Kind.
func (HTTPRoute) ServedElsewhere(route client.Object, _ Flavours) string {
	if !slices.ContainsFunc(route.(*gatewayv1.HTTPRoute).Spec.ParentRefs, isParent) {
		return "it is not attached to Gateway " + names.Namespace + "/" + names.ParentGatewayName +
			": another controller's Gateways serve it"
	}
	return ""
}

// ClaimBinds implements Kind: a claim names HTTPRoutes.
func (HTTPRoute) ClaimBinds(c v1alpha1.ClaimRecord) []string { return c.HTTPRoutes }

// Refusal implements Kind: none; a route's rules apply to its own hostnames only.
func (HTTPRoute) Refusal(client.Object) string { return "" }

// Hosts implements Kind: the route's hostnames, which apply to all its rules. None asks for one
// default host.
func (HTTPRoute) Hosts(route client.Object) []string {
	var hosts []string
	for _, h := range route.(*gatewayv1.HTTPRoute).Spec.Hostnames {
		hosts = append(hosts, string(h))
	}
	return hosts
}

// Tell implements Kind: besides the marks, an allocated route gets its default host as its
// hostname when it has none, and exactly its shard's Gateway among its parentRefs (a route that
// moved loses the old shard's); a rejected one keeps no shard Gateway.
func (HTTPRoute) Tell(route client.Object, a allocation.Allocation) (client.Object, bool) {
	r := route.(*gatewayv1.HTTPRoute)
	want := r.DeepCopy()
	allocation.TellMeta(want, a)
	want.Spec.ParentRefs = slices.DeleteFunc(want.Spec.ParentRefs, isShardGateway)
	if !a.Rejected {
		own, _ := names.DefaultHostLabel(r.Namespace, r.Name)
		for i, h := range want.Spec.Hostnames {
			if i < len(a.Hosts) && string(h) != a.Hosts[i] && strings.HasPrefix(string(h), own+".") {
				want.Spec.Hostnames[i] = gatewayv1.Hostname(a.Hosts[i]) // its default host, on another shard now
			}
		}
		if len(want.Spec.Hostnames) == 0 && len(a.Hosts) == 1 {
			want.Spec.Hostnames = []gatewayv1.Hostname{gatewayv1.Hostname(a.Hosts[0])}
		}
		want.Spec.ParentRefs = append(want.Spec.ParentRefs, shardGatewayRef(a.Shard))
	}
	changed := !equality.Semantic.DeepEqual(r.Labels, want.Labels) ||
		!equality.Semantic.DeepEqual(r.Annotations, want.Annotations) ||
		!equality.Semantic.DeepEqual(r.Spec, want.Spec)
	return want, changed
}

// AlreadySays implements Kind.
func (HTTPRoute) AlreadySays(route client.Object, a allocation.Allocation) bool {
	r := route.(*gatewayv1.HTTPRoute)
	if !allocation.MetaSays(r, a) {
		return false
	}
	if !(HTTPRoute{}).statusSays(r, a) {
		return false
	}
	shardRefs := slices.DeleteFunc(slices.Clone(r.Spec.ParentRefs), func(p gatewayv1.ParentReference) bool { return !isShardGateway(p) })
	if a.Rejected {
		return len(shardRefs) == 0 && !slices.ContainsFunc(r.Status.Parents, namesAShardGateway)
	}
	return len(r.Spec.Hostnames) > 0 && len(shardRefs) == 1 && equality.Semantic.DeepEqual(shardRefs[0], shardGatewayRef(a.Shard))
}

// statusSays: Shardgate's parent entry already says a (TellStatus would change nothing), without
// copying the route.
func (HTTPRoute) statusSays(r *gatewayv1.HTTPRoute, a allocation.Allocation) bool {
	i := slices.IndexFunc(r.Status.Parents, func(p gatewayv1.RouteParentStatus) bool { return p.ControllerName == ParentController })
	if i < 0 {
		return false
	}
	want := parentStatus(r, a)
	keepTransitions(&want, r.Status.Parents[i])
	return equality.Semantic.DeepEqual(want, r.Status.Parents[i])
}

// TellStatus implements Kind: Shardgate answers for the parent Gateway in status.parents, as the
// controller of its class: Accepted with the shard and hosts, or not with the reason (a rejected
// route also loses the shard Gateways' entries, which no router serves any more). ResolvedRefs:
// the parent resolved to a shard's Gateway; the backends are the shard's routers' to resolve, in
// their own entry.
func (HTTPRoute) TellStatus(route client.Object, a allocation.Allocation) bool {
	r := route.(*gatewayv1.HTTPRoute)
	want := parentStatus(r, a)
	parents := slices.DeleteFunc(slices.Clone(r.Status.Parents), func(p gatewayv1.RouteParentStatus) bool {
		return p.ControllerName == ParentController || a.Rejected && namesAShardGateway(p)
	})
	if i := slices.IndexFunc(r.Status.Parents, func(p gatewayv1.RouteParentStatus) bool {
		return p.ControllerName == ParentController
	}); i >= 0 {
		keepTransitions(&want, r.Status.Parents[i])
	}
	parents = append(parents, want)
	if equality.Semantic.DeepEqual(parents, r.Status.Parents) {
		return false
	}
	r.Status.Parents = parents
	return true
}

// ParentController is the controllerName Shardgate answers as for the parent Gateway
// (render.ParentGatewayController: the parent's class names it).
const ParentController = "shardgate.io/route-allocator"

// parentStatus is Shardgate's entry for the route's parentRef to the parent Gateway.
func parentStatus(r *gatewayv1.HTTPRoute, a allocation.Allocation) gatewayv1.RouteParentStatus {
	ref := gatewayv1.ParentReference{Namespace: ptr.To(gatewayv1.Namespace(names.Namespace)), Name: names.ParentGatewayName}
	if i := slices.IndexFunc(r.Spec.ParentRefs, isParent); i >= 0 {
		ref = r.Spec.ParentRefs[i] // as the user wrote it: clients match entries by it
	}
	accepted := metav1.Condition{Type: string(gatewayv1.RouteConditionAccepted), Status: metav1.ConditionTrue,
		Reason: v1alpha1.AllocationAllocated, Message: fmt.Sprintf("allocated to shard %s: served through Gateway %s/%s; hosts %s",
			a.Shard, names.Namespace, names.ShardGatewayName(a.Shard), strings.Join(a.Hosts, ", "))}
	if a.CNAMETarget != "" {
		accepted.Message += "; point your DNS at it: CNAME " + a.CNAMETarget
	}
	if a.Rejected {
		accepted.Status, accepted.Reason, accepted.Message = metav1.ConditionFalse, v1alpha1.AllocationRejected, a.Reason
	}
	resolved := metav1.Condition{Type: string(gatewayv1.RouteConditionResolvedRefs), Status: metav1.ConditionTrue,
		Reason: string(gatewayv1.RouteReasonResolvedRefs), Message: "the parent is Shardgate's; the shard's routers resolve the backends"}
	conds := []metav1.Condition{accepted, resolved}
	for i := range conds {
		conds[i].ObservedGeneration = r.Generation
		conds[i].LastTransitionTime = metav1.NewTime(time.Now().Truncate(time.Second))
	}
	return gatewayv1.RouteParentStatus{ParentRef: ref, ControllerName: ParentController, Conditions: conds}
}

// keepTransitions keeps the transition time of every condition whose status did not change.
func keepTransitions(want *gatewayv1.RouteParentStatus, had gatewayv1.RouteParentStatus) {
	for i, c := range want.Conditions {
		if old := meta.FindStatusCondition(had.Conditions, c.Type); old != nil && old.Status == c.Status {
			want.Conditions[i].LastTransitionTime = old.LastTransitionTime
		}
	}
}

// Spec implements Kind.
func (HTTPRoute) Spec(route client.Object) any { return route.(*gatewayv1.HTTPRoute).Spec }

// Published implements Kind: status.parents, where each shard's routers say they accepted the
// route for their shard's Gateway.
func (HTTPRoute) Published(route client.Object, shards []Shard) bool {
	parents := route.(*gatewayv1.HTTPRoute).Status.Parents
	if shards == nil {
		return slices.ContainsFunc(parents, namesAShardGateway)
	}
	return slices.ContainsFunc(parents, func(p gatewayv1.RouteParentStatus) bool { return namesOneOf(p, shards) })
}

// RouterProblems implements Kind: the conditions of the shard Gateway's entries among
// status.parents that are not True (ResolvedRefs False: BackendNotFound, say), as
// "Type=Status (Reason: message)": each once, at most maxRouterProblems of them and
// maxProblemMessage characters of a message (the status is the routers' and the cluster owner's
// to write, of any size).
func (HTTPRoute) RouterProblems(route client.Object, shard Shard) []string {
	var out []string
	more := 0
	for _, p := range route.(*gatewayv1.HTTPRoute).Status.Parents {
		if !namesOneOf(p, []Shard{shard}) {
			continue
		}
		for _, c := range p.Conditions {
			if c.Status == metav1.ConditionTrue {
				continue
			}
			msg := c.Message
			if r := []rune(msg); len(r) > maxProblemMessage {
				msg = string(r[:maxProblemMessage]) + "…"
			}
			line := fmt.Sprintf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, msg)
			switch {
			case slices.Contains(out, line):
			case len(out) == maxRouterProblems:
				more++
			default:
				out = append(out, line)
			}
		}
	}
	if more > 0 {
		out = append(out, fmt.Sprintf("and %d more", more))
	}
	return out
}

// How much of a route's status RouterProblems repeats.
const (
	maxRouterProblems = 8
	maxProblemMessage = 300
)

// Unpublish implements Kind: only the entries of Shardgate's shard Gateways go; other
// controllers' parents are theirs to tell.
func (HTTPRoute) Unpublish(route client.Object, shards []Shard) {
	r := route.(*gatewayv1.HTTPRoute)
	r.Status.Parents = slices.DeleteFunc(r.Status.Parents, func(p gatewayv1.RouteParentStatus) bool {
		if shards == nil {
			return namesAShardGateway(p)
		}
		return namesOneOf(p, shards)
	})
	if len(r.Status.Parents) == 0 {
		r.Status.Parents = []gatewayv1.RouteParentStatus{} // required by the schema
	}
}

// ReleasedMessage implements Kind.
func (HTTPRoute) ReleasedMessage() string {
	return "the HTTPRoute is no longer attached to Gateway " + names.Namespace + "/" + names.ParentGatewayName +
		": Shardgate no longer allocates it"
}

// Protected implements Kind: routers write the status, where the API server also keeps label and
// annotation changes.
// Gateways too: a Gateway of a shard's class is served by the shard's routers wherever it is.
func (HTTPRoute) Protected() []string { return []string{"httproutes", "httproutes/status", "gateways"} }

// shardParents is the CEL list of a route's parentRefs to shard Gateways (isShardGateway).
func shardParents(route string) string {
	return route + ".spec.?parentRefs.orValue([]).filter(p, p.?namespace.orValue('') == '" + names.Namespace +
		"' && p.name != '" + names.ParentGatewayName + "' && p.?kind.orValue('Gateway') == 'Gateway' && " +
		"p.?group.orValue('" + gatewayv1.GroupName + "') == '" + gatewayv1.GroupName + "')"
}

// Guards implements Kind: only allocation attaches a route to a shard's Gateway. Anyone else who
// did would be served by that shard's routers for any host, past allocation's hijack refusal.
// A route keeps its shard's Gateway only while attached to the parent (detached, it would be served
// by the shard with nothing allocating it). Only Shardgate's namespace has Gateways of its classes.
func (HTTPRoute) Guards() []Guard {
	attach := "; attach to Gateway " + names.Namespace + "/" + names.ParentGatewayName
	hasParent := "object.spec.?parentRefs.orValue([]).exists(p, p.?namespace.orValue('') == '" + names.Namespace +
		"' && p.name == '" + names.ParentGatewayName + "')"
	return []Guard{{
		Expression: shardParents("object") + " == (oldObject == null ? [] : " + shardParents("oldObject") + ")",
		Message: "parentRefs to Gateways in " + names.Namespace + " other than " + names.ParentGatewayName +
			" are set by Shardgate, which allocates the route to a shard" + attach,
	}, {
		Expression: "size(" + shardParents("object") + ") == 0 || " + hasParent,
		Message:    "a route Shardgate allocated stays attached to Gateway " + names.Namespace + "/" + names.ParentGatewayName,
	}, {
		Resource: "gateways",
		Expression: "object.metadata.namespace == '" + names.Namespace + "' || !(object.spec.gatewayClassName == '" +
			names.ParentGatewayClassName + "' || object.spec.gatewayClassName.startsWith('" +
			names.ShardGatewayClassName("") + "'))",
		Message: "GatewayClasses " + names.ParentGatewayClassName + " and " + names.ShardGatewayClassName("*") +
			" are Shardgate's routers'; their Gateways are Shardgate's own" + attach,
	}}
}

// CanaryRoute implements Kind: on a shard whose routers serve its Gateway, a second canary route
// for the Gateway's own host (GatewayHost), attached to that Gateway, so that the seed's request
// travels what every HTTPRoute does; none elsewhere (the Ingress kind routes every shard's canary).
func (HTTPRoute) CanaryRoute(c Canary) client.Object {
	if c.GatewayHost == "" {
		return nil
	}
	return &gatewayv1.HTTPRoute{
		ObjectMeta: c.Meta,
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{shardGatewayRef(c.Shard.Name)}},
			Hostnames:       []gatewayv1.Hostname{gatewayv1.Hostname(c.GatewayHost)},
			Rules: []gatewayv1.HTTPRouteRule{{
				Matches: []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{
					Type: ptr.To(gatewayv1.PathMatchExact), Value: ptr.To(c.Path)}}},
				BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{
					Name: gatewayv1.ObjectName(c.Service), Port: ptr.To(c.PortNumber)}}}},
			}},
		},
	}
}

// isParent: p is the parent Gateway tenants attach to. Its namespace must be written out: a
// parentRef without one means the route's own namespace.
func isParent(p gatewayv1.ParentReference) bool {
	return isGateway(p) && string(ptr.Deref(p.Namespace, "")) == names.Namespace && p.Name == names.ParentGatewayName
}

// isShardGateway: p names a Gateway in Shardgate's namespace other than the parent: only
// allocation may add one (the admission policy refuses anyone else), and Tell keeps exactly the
// allocated shard's.
func isShardGateway(p gatewayv1.ParentReference) bool {
	return isGateway(p) && string(ptr.Deref(p.Namespace, "")) == names.Namespace && p.Name != names.ParentGatewayName
}

func isGateway(p gatewayv1.ParentReference) bool {
	return ptr.Deref(p.Group, gatewayv1.GroupName) == gatewayv1.GroupName && ptr.Deref(p.Kind, "Gateway") == "Gateway"
}

// shardGatewayRef is how allocation attaches a route to its shard's Gateway (every listener).
func shardGatewayRef(shard string) gatewayv1.ParentReference {
	return gatewayv1.ParentReference{Group: ptr.To(gatewayv1.Group(gatewayv1.GroupName)), Kind: ptr.To(gatewayv1.Kind("Gateway")),
		Namespace: ptr.To(gatewayv1.Namespace(names.Namespace)), Name: gatewayv1.ObjectName(names.ShardGatewayName(shard))}
}

func namesAShardGateway(p gatewayv1.RouteParentStatus) bool { return isShardGateway(p.ParentRef) }

func namesOneOf(p gatewayv1.RouteParentStatus, shards []Shard) bool {
	return isShardGateway(p.ParentRef) && slices.ContainsFunc(shards, func(s Shard) bool {
		return string(p.ParentRef.Name) == names.ShardGatewayName(s.Name)
	})
}
