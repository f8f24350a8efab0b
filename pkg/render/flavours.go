package render

import (
	"slices"
	"sync"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// builtin are the flavours Shardgate ships, in the order their classes are listed. A new flavour
// is registered here (and allowed in v1alpha1.Flavour's enum).
var builtin = []Flavour{Traefik{}, HAProxy{}}

// The Ingress cache keeps what the built-in flavours read from routes as shared configuration,
// for allocation to refuse (ReadsAnnotations); Register adds a registered flavour's.
func init() {
	for _, f := range builtin {
		routekinds.KeepSharedConfigAnnotations(f.TenantGuards().RouteAnnotations()...)
	}
}

// registry is builtin plus what tests register: a package variable because the flavours are a
// property of the binary, read by pure functions all over (validation, allocation, rendering),
// like the scheme's types.
var registry = struct {
	sync.RWMutex
	extra []Flavour
}{}

// Register adds a flavour beside the built-in ones until unregister is called: for tests that show
// code works with a flavour it was not written for (pkg/render/flavourtest). Not for production
// flavours, which are listed in builtin.
func Register(f Flavour) (unregister func()) {
	routekinds.KeepSharedConfigAnnotations(f.TenantGuards().RouteAnnotations()...)
	registry.Lock()
	defer registry.Unlock()
	registry.extra = append(registry.extra, f)
	return func() {
		registry.Lock()
		defer registry.Unlock()
		registry.extra = slices.DeleteFunc(registry.extra, func(g Flavour) bool { return g.Name() == f.Name() })
	}
}

// Flavours are the registered flavours, the built-in ones first.
func Flavours() []Flavour {
	registry.RLock()
	defer registry.RUnlock()
	return append(slices.Clone(builtin), registry.extra...)
}

// FlavourFor returns the flavour of that name.
func FlavourFor(name v1alpha1.Flavour) (Flavour, bool) {
	for _, f := range Flavours() {
		if f.Name() == name {
			return f, true
		}
	}
	return nil, false
}

// FlavourNames are the registered flavours' names (what a shard may ask for).
func FlavourNames() []v1alpha1.Flavour {
	var out []v1alpha1.Flavour
	for _, f := range Flavours() {
		out = append(out, f.Name())
	}
	return out
}

// IngressClassNames are the classes of every registered flavour: the Ingresses naming one of them
// are Shardgate's, whether or not the cluster has a shard of that flavour (without one, the
// Ingress is refused with a reason rather than ignored).
func IngressClassNames() []string {
	var out []string
	for _, f := range Flavours() {
		out = append(out, f.IngressClass().Name)
	}
	return out
}

// ShardClass is the IngressClass a shard's routers serve ("" for a flavour that is not
// registered: such a shard is not rendered and takes no Ingress).
func ShardClass(s v1alpha1.ShardSpec) string {
	if f, ok := FlavourFor(s.Flavour); ok {
		return f.IngressClass().Name
	}
	return ""
}

// RouteFlavours are Shardgate's flavours as route kinds read them: every registered flavour's
// class, and the default class of a cluster with these shards (nil: none).
func RouteFlavours(shards []v1alpha1.ShardSpec) routekinds.Flavours {
	by := map[string]string{}
	for _, f := range Flavours() {
		by[f.IngressClass().Name] = string(f.Name())
	}
	return routekinds.Flavours{ByIngressClass: by, DefaultIngressClass: DefaultIngressClass(shards)}
}

// DefaultIngressClass is the class Shardgate may make a cluster's default, and the class of
// Ingresses naming none while no class is the default: the first shard's flavour's (Traefik's
// "shardgate" in every cluster from before flavours could differ). "" when no shard's flavour is
// registered.
func DefaultIngressClass(shards []v1alpha1.ShardSpec) string {
	for _, s := range shards {
		if c := ShardClass(s); c != "" {
			return c
		}
	}
	return ""
}

// ShardRouteClass is the class a shard's routers select their routes by, when its flavour filters
// by class annotation (FilterByClassAnnotation); "" when it filters by label or is not registered.
func ShardRouteClass(s v1alpha1.ShardSpec) string {
	if f, ok := FlavourFor(s.Flavour); ok && f.ShardFilter() == FilterByClassAnnotation {
		return names.ShardRouteClass(s.Name)
	}
	return ""
}

// SharesRouteSpecs reports whether a shard's routers share parts of route specs between tenants
// (TenantGuards.SharesRouteSpecs): allocation refuses routes whose Refusal says why there.
func SharesRouteSpecs(s v1alpha1.ShardSpec) bool {
	f, ok := FlavourFor(s.Flavour)
	return ok && f.TenantGuards().SharesRouteSpecs
}

// ReadsAnnotations are the annotations a shard's routers read from a route as configuration every
// route shares (TenantGuards.RouteAnnotations): allocation refuses routes that carry one there.
func ReadsAnnotations(s v1alpha1.ShardSpec) []string {
	if f, ok := FlavourFor(s.Flavour); ok {
		return f.TenantGuards().RouteAnnotations()
	}
	return nil
}

// ClaimLimits say, for a cluster with the given capabilities, why a new IngressClaim may not have
// flavour f (unclaimable: its routers read tenants' annotations and the cluster serves no
// ValidatingAdmissionPolicy to keep them out, or this binary renders no such flavour), and why
// its claimed routers would serve no Gateway API route (noGatewayRoutes: HTTPRoutes, GRPCRoutes); ""
// each when nothing stands in the way.
func ClaimLimits(f v1alpha1.Flavour, admissionPolicy, gatewayAPI bool) (unclaimable, noGatewayRoutes string) {
	flavour, ok := FlavourFor(f)
	switch {
	case !ok:
		return "this Shardgate renders no such flavour", "this Shardgate renders no such flavour"
	case !admissionPolicy && flavour.TenantGuards().any():
		unclaimable = "they read tenants' annotations as shared configuration, which only the admission policy keeps " +
			"from them, and the cluster serves no ValidatingAdmissionPolicy (Kubernetes 1.30 or later)"
	}
	switch {
	case !gatewayAPI:
		noGatewayRoutes = "the cluster serves no Gateway API (the ClusterIngress' GatewayAPIAvailable says why)"
	case flavour.GatewayClassController() == "":
		noGatewayRoutes = string(f) + " routers serve no Gateway API route"
	}
	return unclaimable, noGatewayRoutes
}
