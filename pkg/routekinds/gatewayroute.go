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
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/allocation"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/watchcache"
)

// gatewayKind is what every Gateway API route kind Shardgate allocates shares (HTTPRoute,
// GRPCRoute): a route is Shardgate's when attached to the parent Gateway (names.ParentGatewayName
// in names.Namespace), whatever else it is attached to; its hostnames are its hosts (one default
// host when it has none); allocation adds the shard's Gateway (names.ShardGatewayName) to its
// parentRefs, which is what makes that shard's routers serve it, and the routers say so among
// status.parents. A kind embeds it and adds what is its own (types, cache, claims, canary).
type gatewayKind struct{}

// gatewayRoute is a Gateway API route as gatewayKind reads and writes it: the fields every route
// kind of the group has (CommonRouteSpec, hostnames, RouteStatus), pointers into the object.
type gatewayRoute struct {
	obj       client.Object
	parents   *[]gatewayv1.ParentReference
	hostnames *[]gatewayv1.Hostname
	status    *gatewayv1.RouteStatus
}

// gatewayRouteOf views obj, which is one of the kinds that embed gatewayKind (the Kind contract:
// a route passed in is always of the kind, as a type assertion in any adapter assumes).
func gatewayRouteOf(obj client.Object) gatewayRoute {
	switch r := obj.(type) {
	case *gatewayv1.HTTPRoute:
		return gatewayRoute{r, &r.Spec.ParentRefs, &r.Spec.Hostnames, &r.Status.RouteStatus}
	case *gatewayv1.GRPCRoute:
		return gatewayRoute{r, &r.Spec.ParentRefs, &r.Spec.Hostnames, &r.Status.RouteStatus}
	}
	panic(fmt.Sprintf("routekinds: %T is not a Gateway API route kind Shardgate allocates", obj))
}

// trimGatewayRoute keeps of a user's route its identity, labels, Shardgate's annotations, spec and
// status. Shardgate's own (its namespace) stay whole.
func trimGatewayRoute(obj any) (any, error) {
	keep := func(m metav1.ObjectMeta) metav1.ObjectMeta {
		return watchcache.TrimMeta(m, v1alpha1.AllocationAnnotations)
	}
	switch r := obj.(type) {
	case *gatewayv1.HTTPRoute:
		if r.Namespace != names.Namespace {
			return &gatewayv1.HTTPRoute{ObjectMeta: keep(r.ObjectMeta), Spec: r.Spec, Status: r.Status}, nil
		}
	case *gatewayv1.GRPCRoute:
		if r.Namespace != names.Namespace {
			return &gatewayv1.GRPCRoute{ObjectMeta: keep(r.ObjectMeta), Spec: r.Spec, Status: r.Status}, nil
		}
	}
	return obj, nil
}

// Serves implements Kind: a route attached to the parent Gateway, for the flavour of the cluster's
// default class (the first shard's): the parent is one per cluster, not per flavour.
func (gatewayKind) Serves(_ context.Context, _ client.Reader, _ *v1alpha1.ClusterIngressSpec, flavours Flavours,
) (func(client.Object) (string, bool), error) {
	flavour := flavours.ByIngressClass[flavours.DefaultIngressClass]
	return func(route client.Object) (string, bool) {
		return flavour, route.GetNamespace() != names.Namespace &&
			slices.ContainsFunc(*gatewayRouteOf(route).parents, isParent)
	}, nil
}

// ServedElsewhere implements Kind.
func (gatewayKind) ServedElsewhere(route client.Object, _ Flavours) string {
	if !slices.ContainsFunc(*gatewayRouteOf(route).parents, isParent) {
		return "it is not attached to Gateway " + names.Namespace + "/" + names.ParentGatewayName +
			": another controller's Gateways serve it"
	}
	return ""
}

// Refusal implements Kind: none; a route's rules apply to its own hostnames only.
func (gatewayKind) Refusal(client.Object) string { return "" }

// Hosts implements Kind: the route's hostnames, which apply to all its rules. None asks for one
// default host.
func (gatewayKind) Hosts(route client.Object) []string {
	var hosts []string
	for _, h := range *gatewayRouteOf(route).hostnames {
		hosts = append(hosts, string(h))
	}
	return hosts
}

// Tell implements Kind: besides the marks, an allocated route gets its default host as its
// hostname when it has none, and exactly its shard's Gateway among its parentRefs (a route that
// moved loses the old shard's); a rejected one keeps no shard Gateway.
func (gatewayKind) Tell(route client.Object, a allocation.Allocation) (client.Object, bool) {
	r := gatewayRouteOf(route)
	want := route.DeepCopyObject().(client.Object)
	w := gatewayRouteOf(want)
	allocation.TellMeta(want, a)
	*w.parents = slices.DeleteFunc(*w.parents, isShardGateway)
	if !a.Rejected {
		own, _ := names.DefaultHostLabel(route.GetNamespace(), route.GetName())
		for i, h := range *w.hostnames {
			if i < len(a.Hosts) && string(h) != a.Hosts[i] && strings.HasPrefix(string(h), own+".") {
				(*w.hostnames)[i] = gatewayv1.Hostname(a.Hosts[i]) // its default host, on another shard now
			}
		}
		if len(*w.hostnames) == 0 && len(a.Hosts) == 1 {
			*w.hostnames = []gatewayv1.Hostname{gatewayv1.Hostname(a.Hosts[0])}
		}
		*w.parents = append(*w.parents, shardGatewayRef(a.Shard))
	}
	changed := !equality.Semantic.DeepEqual(route.GetLabels(), want.GetLabels()) ||
		!equality.Semantic.DeepEqual(route.GetAnnotations(), want.GetAnnotations()) ||
		!equality.Semantic.DeepEqual(*r.parents, *w.parents) || !equality.Semantic.DeepEqual(*r.hostnames, *w.hostnames)
	return want, changed
}

// AlreadySays implements Kind.
func (gatewayKind) AlreadySays(route client.Object, a allocation.Allocation) bool {
	r := gatewayRouteOf(route)
	if !allocation.MetaSays(route, a) || !statusSays(r, a) {
		return false
	}
	shardRefs := slices.DeleteFunc(slices.Clone(*r.parents), func(p gatewayv1.ParentReference) bool { return !isShardGateway(p) })
	if a.Rejected {
		return len(shardRefs) == 0 && !slices.ContainsFunc(r.status.Parents, namesAShardGateway)
	}
	return len(*r.hostnames) > 0 && len(shardRefs) == 1 && equality.Semantic.DeepEqual(shardRefs[0], shardGatewayRef(a.Shard))
}

// statusSays: Shardgate's parent entry already says a (TellStatus would change nothing), without
// copying the route.
func statusSays(r gatewayRoute, a allocation.Allocation) bool {
	i := slices.IndexFunc(r.status.Parents, func(p gatewayv1.RouteParentStatus) bool { return p.ControllerName == ParentController })
	if i < 0 {
		return false
	}
	want := parentStatus(r, a)
	keepTransitions(&want, r.status.Parents[i])
	return equality.Semantic.DeepEqual(want, r.status.Parents[i])
}

// TellStatus implements Kind: Shardgate answers for the parent Gateway in status.parents, as the
// controller of its class: Accepted with the shard and hosts, or not with the reason (a rejected
// route also loses the shard Gateways' entries, which no router serves any more). ResolvedRefs:
// the parent resolved to a shard's Gateway; the backends are the shard's routers' to resolve, in
// their own entry.
func (gatewayKind) TellStatus(route client.Object, a allocation.Allocation) bool {
	r := gatewayRouteOf(route)
	want := parentStatus(r, a)
	parents := slices.DeleteFunc(slices.Clone(r.status.Parents), func(p gatewayv1.RouteParentStatus) bool {
		return p.ControllerName == ParentController || a.Rejected && namesAShardGateway(p)
	})
	if i := slices.IndexFunc(r.status.Parents, func(p gatewayv1.RouteParentStatus) bool {
		return p.ControllerName == ParentController
	}); i >= 0 {
		keepTransitions(&want, r.status.Parents[i])
	}
	parents = append(parents, want)
	if equality.Semantic.DeepEqual(parents, r.status.Parents) {
		return false
	}
	r.status.Parents = parents
	return true
}

// ParentController is the controllerName Shardgate answers as for the parent Gateway
// (render.ParentGatewayController: the parent's class names it).
const ParentController = "shardgate.io/route-allocator"

// parentStatus is Shardgate's entry for the route's parentRef to the parent Gateway.
func parentStatus(r gatewayRoute, a allocation.Allocation) gatewayv1.RouteParentStatus {
	ref := gatewayv1.ParentReference{Namespace: ptr.To(gatewayv1.Namespace(names.Namespace)), Name: names.ParentGatewayName}
	if i := slices.IndexFunc(*r.parents, isParent); i >= 0 {
		ref = (*r.parents)[i] // as the user wrote it: clients match entries by it
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
		conds[i].ObservedGeneration = r.obj.GetGeneration()
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

// Published implements Kind: status.parents, where each shard's routers say they accepted the
// route for their shard's Gateway.
func (gatewayKind) Published(route client.Object, shards []Shard) bool {
	parents := gatewayRouteOf(route).status.Parents
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
func (gatewayKind) RouterProblems(route client.Object, shard Shard) []string {
	var out []string
	more := 0
	for _, p := range gatewayRouteOf(route).status.Parents {
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
func (gatewayKind) Unpublish(route client.Object, shards []Shard) {
	st := gatewayRouteOf(route).status
	st.Parents = slices.DeleteFunc(st.Parents, func(p gatewayv1.RouteParentStatus) bool {
		if shards == nil {
			return namesAShardGateway(p)
		}
		return namesOneOf(p, shards)
	})
	if len(st.Parents) == 0 {
		st.Parents = []gatewayv1.RouteParentStatus{} // required by the schema
	}
}

// Released implements Kind: the label and annotations, and every parentRef to a shard's Gateway.
func (gatewayKind) Released(route client.Object) (client.Object, bool) {
	if !allocation.CarriesAllocation(route) && !slices.ContainsFunc(*gatewayRouteOf(route).parents, isShardGateway) {
		return nil, false
	}
	want := route.DeepCopyObject().(client.Object)
	allocation.Untell(want)
	w := gatewayRouteOf(want)
	*w.parents = slices.DeleteFunc(*w.parents, isShardGateway)
	return want, true
}

// releasedMessage is a kind's Kind.ReleasedMessage.
func releasedMessage(kind string) string {
	return "the " + kind + " is no longer attached to Gateway " + names.Namespace + "/" + names.ParentGatewayName +
		": Shardgate no longer allocates it"
}

// shardParents is the CEL list of a route's parentRefs to shard Gateways (isShardGateway).
func shardParents(route string) string {
	return route + ".spec.?parentRefs.orValue([]).filter(p, p.?namespace.orValue('') == '" + names.Namespace +
		"' && p.name != '" + names.ParentGatewayName + "' && p.?kind.orValue('Gateway') == 'Gateway' && " +
		"p.?group.orValue('" + gatewayv1.GroupName + "') == '" + gatewayv1.GroupName + "')"
}

// routeGuards are every Gateway API kind's guards: only allocation attaches a route to a shard's
// Gateway. Anyone else who did would be served by that shard's routers for any host, past
// allocation's hijack refusal. A route keeps its shard's Gateway only while attached to the parent
// (detached, it would be served by the shard with nothing allocating it).
func routeGuards() []Guard {
	// The parent as isParent knows it: a Gateway (a Service of its name is no parent, and a route
	// attached to one would be out of allocation's reach while keeping its shard's Gateway).
	hasParent := "object.spec.?parentRefs.orValue([]).exists(p, p.?namespace.orValue('') == '" + names.Namespace +
		"' && p.name == '" + names.ParentGatewayName + "' && p.?kind.orValue('Gateway') == 'Gateway' && " +
		"p.?group.orValue('" + gatewayv1.GroupName + "') == '" + gatewayv1.GroupName + "')"
	return []Guard{{
		Expression: shardParents("object") + " == (oldObject == null ? [] : " + shardParents("oldObject") + ")",
		Message: "parentRefs to Gateways in " + names.Namespace + " other than " + names.ParentGatewayName +
			" are set by Shardgate, which allocates the route to a shard" + attachToParent,
	}, {
		Expression: "size(" + shardParents("object") + ") == 0 || " + hasParent,
		Message:    "a route Shardgate allocated stays attached to Gateway " + names.Namespace + "/" + names.ParentGatewayName,
	}}
}

const attachToParent = "; attach to Gateway " + names.Namespace + "/" + names.ParentGatewayName

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
