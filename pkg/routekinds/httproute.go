package routekinds

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/gatewayapi"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/watchcache"
)

// HTTPRoute is Gateway API's gateway.networking.k8s.io/v1 HTTPRoute, allocated as every Gateway
// API route kind is (gatewayKind). Its kind also caches the ListenerSets, routes the canary through
// a shard's Gateway and guards the Gateways of Shardgate's classes.
type HTTPRoute struct{ gatewayKind }

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
	return objects(list.(*gatewayv1.HTTPRouteList).Items)
}

// Cached implements Kind: every HTTPRoute, and every ListenerSet (the listeners tenants ask for
// their hosts: pkg/listenersets). Which Gateways exist is not read: a route is Shardgate's by its
// parentRef alone.
func (HTTPRoute) Cached() []Cached {
	return []Cached{{Object: &gatewayv1.HTTPRoute{}, Transform: trimGatewayRoute},
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

// ClaimBinds implements Kind: a claim names HTTPRoutes.
func (HTTPRoute) ClaimBinds(c v1alpha1.ClaimRecord) []string { return c.HTTPRoutes }

// Spec implements Kind.
func (HTTPRoute) Spec(route client.Object) any { return route.(*gatewayv1.HTTPRoute).Spec }

// ReleasedMessage implements Kind.
func (HTTPRoute) ReleasedMessage() string { return releasedMessage("HTTPRoute") }

// Protected implements Kind: routers write the status, where the API server also keeps label and
// annotation changes.
// Gateways too: a Gateway of a shard's class is served by the shard's routers wherever it is.
func (HTTPRoute) Protected() []string { return []string{"httproutes", "httproutes/status", "gateways"} }

// Guards implements Kind: every Gateway API route kind's (routeGuards), and Gateways': only
// Shardgate's namespace has Gateways of its classes.
func (HTTPRoute) Guards() []Guard {
	return append(routeGuards(), Guard{
		Resource: "gateways",
		Expression: "object.metadata.namespace == '" + names.Namespace + "' || !(object.spec.gatewayClassName == '" +
			names.ParentGatewayClassName + "' || object.spec.gatewayClassName.startsWith('" +
			names.ShardGatewayClassName("") + "'))",
		Message: "GatewayClasses " + names.ParentGatewayClassName + " and " + names.ShardGatewayClassName("*") +
			" are Shardgate's routers'; their Gateways are Shardgate's own" + attachToParent,
	})
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
