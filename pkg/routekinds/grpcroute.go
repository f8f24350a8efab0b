package routekinds

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/gatewayapi"
)

// GRPCRoute is Gateway API's gateway.networking.k8s.io/v1 GRPCRoute, allocated as every Gateway
// API route kind is (gatewayKind): attached to the parent Gateway, it gets a shard, a default
// hostname when it has none and the shard's Gateway among its parentRefs, and that shard's routers
// serve it over HTTP/2 (h2c on the HTTP listener, h2 on HTTPS) to its backends. An IngressClaim
// binds those it names in spec.grpcRoutes; the canary checks each shard through an HTTPRoute.
type GRPCRoute struct{ gatewayKind }

var _ Kind = GRPCRoute{}

// Name implements Kind.
func (GRPCRoute) Name() string { return "GRPCRoute" }

// GroupVersionKind implements Kind.
func (GRPCRoute) GroupVersionKind() schema.GroupVersionKind {
	return gatewayapi.GroupVersion.WithKind("GRPCRoute")
}

// Resource implements Kind.
func (GRPCRoute) Resource() string { return "grpcroutes" }

// ShortNames implements Kind: Gateway API defines none.
func (GRPCRoute) ShortNames() []string { return nil }

// AddToScheme implements Kind: the standard channel's v1 types.
func (GRPCRoute) AddToScheme(s *runtime.Scheme) error { return gatewayv1.Install(s) }

// New implements Kind.
func (GRPCRoute) New() client.Object { return &gatewayv1.GRPCRoute{} }

// NewList implements Kind.
func (GRPCRoute) NewList() client.ObjectList { return &gatewayv1.GRPCRouteList{} }

// Items implements Kind.
func (GRPCRoute) Items(list client.ObjectList) []client.Object {
	return objects(list.(*gatewayv1.GRPCRouteList).Items)
}

// Cached implements Kind: every GRPCRoute.
func (GRPCRoute) Cached() []Cached {
	return []Cached{{Object: &gatewayv1.GRPCRoute{}, Transform: trimGatewayRoute}}
}

// ClaimBinds implements Kind: a claim names GRPCRoutes.
func (GRPCRoute) ClaimBinds(c v1alpha1.ClaimRecord) []string { return c.GRPCRoutes }

// Spec implements Kind.
func (GRPCRoute) Spec(route client.Object) any { return route.(*gatewayv1.GRPCRoute).Spec }

// ReleasedMessage implements Kind.
func (GRPCRoute) ReleasedMessage() string { return releasedMessage("GRPCRoute") }

// Protected implements Kind: routers write the status, where the API server also keeps label and
// annotation changes. (The Gateways of Shardgate's classes are guarded once, by HTTPRoute's kind.)
func (GRPCRoute) Protected() []string { return []string{"grpcroutes", "grpcroutes/status"} }

// Guards implements Kind: every Gateway API route kind's.
func (GRPCRoute) Guards() []Guard { return routeGuards() }

// CanaryRoute implements Kind: none; the HTTPRoute kind checks a shard's Gateway.
func (GRPCRoute) CanaryRoute(Canary) client.Object { return nil }
