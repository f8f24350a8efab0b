package render

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/listenersets"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// Flavour is one kind of router (Traefik today). It owns everything that differs between router
// implementations; RenderShard builds what every router shares around it (ServiceAccount, role
// binding, the Deployment's shape: replicas, spread, rolling update, preStop, probes, least
// privilege, API token; the Service, the disruption budget, the canary route, the VIP agent).
// Everything outside this package asks the flavour of a shard (FlavourFor) instead of naming one.
// A flavour's methods are pure.
//
// What a flavour's routers must do, which no method can say (the flavour conformance suite checks
// it on real pods):
//   - serve exactly the routes its ShardFilter picks, and no other: the Ingresses of its
//     IngressClass that match RouterInput.RouteSelector, or the Ingresses whose ingress.class
//     annotation is RouterInput.RouteClass (Shardgate's allocation writes the label and the
//     annotation, and only Shardgate may);
//   - publish RouterInput.Domain in status.loadBalancer of every Ingress they serve: Shardgate tells
//     users their shard, hosts and CNAME target; the router that serves an Ingress tells its address;
//   - serve HTTP and HTTPS on RouterInput's ports, with the cluster's certificate (TLSInput) as the
//     default certificate and, with RedirectHTTP, plain HTTP answered by a permanent redirect to
//     port 443;
//   - answer Readiness while they serve (a router that does not is taken out of DNS, of its
//     Service and, on a VIP shard, gives up its node's VIPs) and keep serving through the preStop
//     delay, so a rolling update or drain loses no request;
//   - run as RenderShard's security context allows: uid 65532 without capabilities behind a
//     Service, root with NET_BIND_SERVICE only on the host network, a read-only root file system.
type Flavour interface {
	// Name is the flavour's value of ShardSpec.Flavour.
	Name() v1alpha1.Flavour
	// ShardFilter is how the routers pick their shard's routes.
	ShardFilter() ShardFilter
	// TenantGuards are what the routers would take from a tenant's routes and Services beyond the
	// route's own reach: in a cluster with a shard of the flavour, the admission policy refuses
	// them to anyone but Shardgate.
	TenantGuards() TenantGuards
	// IngressClass is the class the flavour's routers serve. Each flavour has its own: a class names
	// one controller and a router serves only its controller's classes, so flavours share a
	// cluster by having one class each, and an Ingress naming a flavour's class is allocated to that
	// flavour's shards only.
	IngressClass() IngressClass
	// GatewayClassController is the spec.controllerName of the flavour's GatewayClass, for when
	// Shardgate serves Gateway API routes; "" when its routers serve none.
	GatewayClassController() string
	// DefaultImage is the router image of a shard that names none.
	DefaultImage() string
	// Ports are where the router listens behind a Service (unprivileged ports: it runs without
	// capabilities there). On the host network it listens on the node's 80 and 443 instead, and
	// on Admin as given.
	Ports() Ports
	// Health answers 200 while the router process works: the liveness probe.
	Health() HTTPGet
	// Readiness answers 200 while the router serves routes: the readiness probe, which gates DNS
	// (only nodes with a ready router are published) and the Service's endpoints, and the VIP
	// agent's health URL.
	Readiness() HTTPGet
	// Canary is what the shard's canary route sends to the routers and what they answer.
	Canary() Canary
	// LoadMetrics is where the routers expose their own metrics for the load reporter (load.go);
	// a zero Format when they expose none it reads: the shard's load is then unknown.
	LoadMetrics() LoadMetrics
	// ClusterRole is the role every router of the flavour is bound to: its name and rules, the
	// least the router needs (RenderShard labels it; config/user-cluster/rbac.yaml ships it).
	ClusterRole() *rbacv1.ClusterRole
	// GatewayClusterRole is the role the routers are bound to as well where the cluster serves
	// Gateway API (what serving Gateways needs beyond ClusterRole); nil when none. Apart, so that
	// clusters without Gateway API keep the role they have (Shardgate may not change it).
	GatewayClusterRole() *rbacv1.ClusterRole
	// Router is the flavour's part of one shard's pod.
	Router(in RouterInput) Router
	// TLSObjects are the cluster-wide objects (in names.Namespace) that make the cluster's key pair
	// the default certificate of the flavour's routers, which Router mounts or names: the key pair
	// itself is the Secret names.TLSSecretName once issued, rendered for every flavour. A renewed key
	// pair must reach running routers without a rollout. RenderShard labels the objects.
	TLSObjects(in *TLSInput) []Object
}

// ShardFilter is how a flavour's routers pick their shard's routes out of every route.
type ShardFilter int

const (
	// FilterByLabel: the routes of the flavour's class that match a label selector on the shard
	// label (RouterInput.RouteSelector): Traefik's.
	FilterByLabel ShardFilter = iota
	// FilterByClassAnnotation: the routes whose ingress.class annotation names the shard's routers'
	// class (RouterInput.RouteClass, v1alpha1.ShardClassAnnotation), for routers that take no
	// label selector: HAProxy's.
	FilterByClassAnnotation
)

// TenantGuards are what a flavour's routers read from tenants' objects as the configuration every
// tenant's routes share (ingress-nginx's snippets lesson), which the admission policy refuses.
type TenantGuards struct {
	// Annotations are annotation names (the part after any prefix) the routers read from routes
	// and from the Services routes name, or from their own ConfigMap only: refused when added or
	// changed, on routes and Services.
	Annotations []string
	// ConfigMapOnly are those of Annotations the routers read from their own ConfigMap only:
	// refusing them costs tenants nothing, but a route carrying one is not refused by allocation
	// (RouteAnnotations), since no router reads it there.
	ConfigMapOnly []string
	// ExternalNameServices: the routers proxy to a route's ExternalName Service, which names any
	// host (the node's own localhost on the host network: CVE-2021-25740). Refused when created or
	// changed to.
	ExternalNameServices bool
	// SharesRouteSpecs: the routers put parts of a route's spec into configuration every route
	// shares: its paths unescaped into line-based route maps (a path with whitespace or a control
	// character adds rows of its own: another tenant's host), its default backend as the shared
	// frontends' catch-all. Refused on Ingresses (an allocated one cannot take a default backend),
	// and allocation refuses such routes on these shards (routekinds.Kind.Refusal).
	SharesRouteSpecs bool
}

// RouteAnnotations are the Annotations the routers read from routes and their Services.
func (g TenantGuards) RouteAnnotations() []string {
	return slices.DeleteFunc(slices.Clone(g.Annotations), func(n string) bool { return slices.Contains(g.ConfigMapOnly, n) })
}

// with is g and h together.
func (g TenantGuards) with(h TenantGuards) TenantGuards {
	return TenantGuards{Annotations: append(slices.Clone(g.Annotations), h.Annotations...),
		ConfigMapOnly:        append(slices.Clone(g.ConfigMapOnly), h.ConfigMapOnly...),
		ExternalNameServices: g.ExternalNameServices || h.ExternalNameServices,
		SharesRouteSpecs:     g.SharesRouteSpecs || h.SharesRouteSpecs}
}

// any reports whether g guards anything.
func (g TenantGuards) any() bool {
	return len(g.Annotations) > 0 || g.ExternalNameServices || g.SharesRouteSpecs
}

// IngressClass is an IngressClass's name and spec.controller.
type IngressClass struct {
	Name, Controller string
}

// Ports are a router's container ports: HTTP and HTTPS for routes, Admin for its health answers
// and the canary.
type Ports struct {
	HTTP, HTTPS, Admin int32
}

// HTTPGet is an HTTP endpoint of the router on the pod's address (the node's on the host network).
type HTTPGet struct {
	Path string
	Port int32
	// Settle (readiness only) is how long a router answers it before it serves its routes: for a
	// router that answers before all its routes are loaded. DNS publishes a router, and the VIP
	// agent brings a VIP home to it, only once it has been ready that long. It is not the probe's
	// successThreshold: that is in the pod template, and changing it would replace every router
	// of every cluster at the upgrade that brings it.
	Settle time.Duration
}

// Canary is a flavour's canary route: a request for Path on the routers' Port, through the
// shard's entry point and host routing like any user's route, must answer 200 with Body.
type Canary struct {
	Path string
	Port int32
	Body string
}

// RouterInput is what a flavour's router is made from.
type RouterInput struct {
	Shard v1alpha1.ShardSpec
	// Domain is the shard's domain apex, which the routers publish in Ingress status.
	Domain string
	// HTTP and HTTPS are the ports to serve routes on (the node's 80 and 443 on the host network,
	// the flavour's Ports behind a Service).
	HTTP, HTTPS int32
	// RouteSelector is the shard filter of FilterByLabel, a label selector: the routers serve the
	// Ingresses of the flavour's class that match it, and no other.
	RouteSelector string
	// RouteClass is the shard filter of FilterByClassAnnotation: the routers serve the Ingresses
	// whose ingress.class annotation is RouteClass, and no other.
	RouteClass string
	// TLS, when set: serve HTTPS with TLSObjects' default certificate (and redirect HTTP if asked).
	TLS *TLSInput
	// GatewayAPI: the cluster serves Gateway API; the routers also serve the routes attached to
	// the shard's Gateway (of the GatewayClass names.ShardGatewayClassName, labelled with the shard,
	// whose controller is GatewayClassController), on the same ports.
	GatewayAPI bool
}

// Router is a flavour's part of a shard's pod.
type Router struct {
	// Container is the router's container: its name, args, env and volume mounts. RenderShard sets
	// the image, ports, probes, preStop, resources and security context, and mounts the API token.
	Container corev1.Container
	// Volumes the container mounts (the pod's fsGroup is then the router's group, so that a
	// key pair mounted 0440 is readable by the router and no one else).
	Volumes []corev1.Volume
	// Objects are the shard's own objects the routers read (in names.Namespace, named after the
	// shard); RenderShard labels them as the shard's.
	Objects []Object
}

// Object is a typed object and its kind, as renderers build them (toUnstructured applies them).
type Object struct {
	GVK schema.GroupVersionKind
	Obj runtime.Object
}

// RenderInput is what one shard is rendered from.
type RenderInput struct {
	// Domain is the shard's domain (names.ShardDomain).
	Domain string
	Shard  v1alpha1.ShardSpec
	// DNSTTL is the records' TTL in seconds; a router's preStop delay outlasts it so that DNS drops
	// a node before the router on it stops.
	DNSTTL int64
	// TLS, when set, makes the router serve HTTPS with the cluster's certificate (TLSObjects).
	// Only RedirectHTTP shapes the router: a renewed key pair reaches it without a rollout.
	TLS *TLSInput
	// VIP: a VIP shard's allocated VIPs and its routers' nodes (keepalived's configuration).
	VIP *VIPInput
	// Canary renders the shard's canary route (canaryObjects), of each of RouteKinds that routes it.
	// The shard Gateway's listeners take the Gateway API kinds among them (allocatedRoutes).
	Canary     bool
	RouteKinds routekinds.Registry
	// GatewayAPI: the cluster serves Gateway API: a flavour with a GatewayClassController gets the
	// shard's GatewayClass and Gateway, and its routers serve them.
	GatewayAPI bool
	// TenantListeners are the listeners of tenants' ListenerSets the shard's Gateway takes beside
	// its own (listenersets.Decide).
	TenantListeners []listenersets.Listener
}
