// Package routekinds is the route-kind contract: what Shardgate must know of one kind of route
// (an Ingress today, Gateway API's HTTPRoute next) to cache it, allocate it, tell its owner the
// outcome, protect what it wrote, check a shard through it and clean up after itself. Each kind
// answers in one adapter file (ingress.go); the user-cluster cache (pkg/clusteraccess), the
// allocation controller, the shards controller's canary, admission policy and cleanup, and
// kubectl-shardgate loop over a Registry handed to them and never name a kind. The planner
// (pkg/allocation) needs nothing of it: a Route is hosts, labels and held marks, whatever object
// carries them. The shape follows external-dns, whose source/ingress.go and
// source/gateway_httproute.go feed one endpoint pipeline.
package routekinds

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/allocation"
)

// Kind is one kind of route. Its methods are pure but for Serves, which reads the cache, and
// they never write: the controllers write what they return. A route passed in is always an
// object of the kind (New's type); a method may assume it.
type Kind interface {
	// Which objects.

	// Name is the kind as users write it ("Ingress"): in Events, messages and kubectl-shardgate.
	Name() string
	// GroupVersionKind of its routes, which Events name and the user-cluster REST mapper maps.
	GroupVersionKind() schema.GroupVersionKind
	// Resource is its API resource ("ingresses") and ShortNames kubectl's short names ("ing"):
	// kubectl-shardgate explain takes either, like kubectl.
	Resource() string
	ShortNames() []string
	// AddToScheme registers its types in a user-cluster scheme (Ingress: client-go's own).
	AddToScheme(s *runtime.Scheme) error
	// New and NewList are an empty route and an empty list of them; Items are a list's routes,
	// pointers into it (read-only while the list came from the cache unsafely).
	New() client.Object
	NewList() client.ObjectList
	Items(list client.ObjectList) []client.Object
	// Cached is what the user-cluster cache holds for the kind: its routes first, then what
	// deciding them reads (Ingress: IngressClasses). Namespaces (shards' namespaceSelectors) are
	// every kind's, cached once by the cache itself. A cluster caches only what it serves (found
	// at each engagement): a kind whose routes it does not serve is not among the cluster's kinds
	// (clusteraccess.Cluster.RouteKinds), and a kind's other entries it does not serve are left out
	// of that kind's Cached there, so Serves reading one gets watchcache.ErrNotHeld and takes it as
	// none (HTTPRoutes without ListenerSets on an older Gateway API).
	Cached() []Cached
	// Serves returns which of the cluster's routes are Shardgate's to allocate, and the router
	// flavour each is for (only that flavour's shards may take it: a router serves only its own
	// flavour's class); spec is the ClusterIngress', flavours Shardgate's classes (Ingress: the
	// flavour of the class it names, or of the default class while it names none and that is
	// Shardgate's). The others are another controller's: Shardgate takes back any marks it left
	// on them.
	Serves(ctx context.Context, rd client.Reader, spec *v1alpha1.ClusterIngressSpec, flavours Flavours,
	) (func(route client.Object) (flavour string, ours bool), error)
	// ServedElsewhere is why, by the route alone, another controller serves it ("" when nothing on
	// it says so): what kubectl-shardgate explain says of a route Shardgate has not decided.
	ServedElsewhere(route client.Object, flavours Flavours) string
	// ClaimBinds are the names of the kind's routes an IngressClaim binds to its shard, in the
	// claim's namespace.
	ClaimBinds(c v1alpha1.ClaimRecord) []string

	// Their hosts.

	// Hosts are the hosts the route asks for, one per rule in order, "" for a rule without one
	// (Shardgate gives it a default host). No hosts at all asks for one default host.
	Hosts(route client.Object) []string
	// Refusal is why the route's own spec cannot be served by routers that share route specs
	// between tenants (render.TenantGuards.SharesRouteSpecs; "" when it can): the planner refuses
	// it on such shards with that reason.
	Refusal(route client.Object) string

	// The marks Shardgate writes: the shard label and the allocation annotations (the same on
	// every kind: allocation.TellMeta), and the hosts it filled in (the kind's spec).

	// Tell returns a copy of route that says decision a, and whether it differs from route.
	Tell(route client.Object, a allocation.Allocation) (want client.Object, changed bool)
	// AlreadySays reports, without copying, whether route already says decision a: the pass
	// over every route of a cluster asks it first and writes nothing when it does.
	AlreadySays(route client.Object, a allocation.Allocation) bool
	// Spec is the part of a route Tell may change beyond labels and annotations; a change is
	// patched whole (the cache keeps it whole).
	Spec(route client.Object) any
	// TellStatus makes route's status say decision a, in place, and reports whether it changed
	// anything: what Shardgate itself tells there (Ingress: a rejected one shows no address;
	// HTTPRoute: Shardgate's entry for the parent Gateway among status.parents). AlreadySays is
	// false while it would change something.
	TellStatus(route client.Object, a allocation.Allocation) bool

	// How status tells the user: the shard's routers say in the route's status that they serve
	// it (Ingress: the shard's domain apex in status.loadBalancer; an HTTPRoute would have its
	// shard's Gateway among status.parents), which is also how the user sees that a router picked
	// the route up. Shardgate only takes such entries away: all of them from a route it rejects,
	// its shards' when it lets go of a cluster.

	// Published reports whether route's status names one of shards; with nil shards, whether it
	// holds any entry at all.
	Published(route client.Object, shards []Shard) bool
	// Unpublish removes from route's status the entries that name one of shards; with nil
	// shards, every entry.
	Unpublish(route client.Object, shards []Shard)
	// RouterProblems are what shard's routers report wrong with route in its status, one line each
	// (HTTPRoute: its shard Gateway's conditions that are not True, with reason and message);
	// none where the kind's routers report nothing beyond serving it (Ingress).
	RouterProblems(route client.Object, shard Shard) []string
	// ReleasedMessage is the Event that tells the owner Shardgate let go of a route that is
	// another controller's now.
	ReleasedMessage() string
	// Released returns a copy of route without anything Shardgate marks routes with (its label
	// and annotations, allocation.Untell, and the kind's own marks in its spec: a Gateway API
	// route's shard Gateway parentRefs), and whether route carries any. A route that is not
	// Shardgate's keeps none: set by hand where nothing guarded them (before the kind was guarded
	// in the cluster), they would have a shard's routers serve it with nothing allocating it. It
	// copies only a route that carries some: it is asked of every route not Shardgate's, each pass.
	Released(route client.Object) (want client.Object, carried bool)

	// What the admission policy protects.

	// Protected are the resources on which only Shardgate may set or change its marks: the
	// routes and every subresource that can carry label and annotation changes (status).
	Protected() []string
	// Guards are the kind's own marks in its spec that only Shardgate may set or change (an
	// HTTPRoute's parentRefs to shard Gateways, which make a shard's routers serve it): CEL
	// expressions over object and oldObject that must hold for anyone else. Applied to the kind's
	// objects only.
	Guards() []Guard

	// How a shard is checked.

	// CanaryRoute is the route that sends the canary's request for c.Host through a shard's
	// routers; nil when the kind does not route that shard's canary (another kind does).
	CanaryRoute(c Canary) client.Object
}

// Guard is one admission rule of a kind (Kind.Guards).
type Guard struct {
	// Resource is the resource of the kind's API group it applies to: one of Protected ("": the
	// kind's own, Resource).
	Resource string
	// Expression must be true for a create or update by anyone but Shardgate; oldObject is null on
	// create.
	Expression string
	// Message is what the API server answers when it is not.
	Message string
}

// Flavours are Shardgate's router flavours as routes name them (render.RouteFlavours).
type Flavours struct {
	// ByIngressClass is each registered flavour's IngressClass and the flavour.
	ByIngressClass map[string]string
	// DefaultIngressClass is the class Shardgate may make the cluster's default (the first
	// shard's flavour's): classless Ingresses are for it while no class is the default.
	DefaultIngressClass string
}

// Cached is one kind of object the user-cluster cache holds for a route kind: every object of
// it, trimmed to what is read.
type Cached struct {
	Object client.Object
	// Transform trims an object as it enters the cache. Shardgate's own objects (in its
	// namespace, its IngressClasses) must come out whole: the shards controller compares them with
	// what it renders.
	Transform toolscache.TransformFunc
	// ClusterScoped: the kind has no namespace.
	ClusterScoped bool
	// Rendered: Shardgate applies objects of this kind too (its flavours' IngressClasses), so a
	// change to one also wakes the controllers that repair drift, and cleanup lists it by label.
	Rendered bool
}

// Shard is one of a cluster's shards as a route's status may name it: by its name (what its own
// parent objects are named after) or by its domain apex (what routers publish as an address).
type Shard struct {
	Name, Domain string
}

// Canary is what a canary route is made of.
type Canary struct {
	// Shard is the shard the canary checks.
	Shard v1alpha1.ShardSpec
	// Meta is the route's name, namespace (Shardgate's) and labels.
	Meta metav1.ObjectMeta
	// Host and Path are what the canary requests (names.CanaryHost, the path of the shard's
	// flavour's canary).
	Host, Path string
	// Service and Port (a port name) are the backend: the shard's routers' health answer.
	Service, Port string
	// IngressClass is the class of the shard's router flavour (render.Flavour), which an Ingress
	// canary names: a router serves only its own flavour's class.
	IngressClass string
	// PortNumber is Port's number (Gateway API names backend ports by number).
	PortNumber int32
	// GatewayHost, set when the shard's routers serve its Gateway, is the host only an HTTPRoute
	// canary routes, through that Gateway (names.CanaryGatewayHost): the seed requests it too.
	GatewayHost string
}

// releasedMeta is Released for a kind whose only marks are the label and annotations.
func releasedMeta(route client.Object) (client.Object, bool) {
	if !allocation.CarriesAllocation(route) {
		return nil, false
	}
	want := route.DeepCopyObject().(client.Object)
	allocation.Untell(want)
	return want, true
}
