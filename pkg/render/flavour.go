package render

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// Flavour renders the router of one shard: the flavour-specific objects (ServiceAccount, RBAC,
// Deployment, Service, PodDisruptionBudget) and the IngressClass all its shards share. A renderer
// is a pure function of its input.
//
// A flavour's routers must publish the shard's domain apex (RenderInput.Domain) in
// status.loadBalancer of every Ingress they serve: Shardgate tells users their shard, hosts and
// CNAME target, and the router that serves an Ingress tells its address.
type Flavour interface {
	// IngressClassController is the spec.controller of the shared IngressClass.
	IngressClassController() string
	// Render returns the objects of one shard.
	Render(in RenderInput) ([]*unstructured.Unstructured, error)
}

// RenderInput is what a renderer decides from.
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
	Canary     bool
	RouteKinds routekinds.Registry
}

var flavours = map[v1alpha1.Flavour]Flavour{
	v1alpha1.FlavourTraefik: Traefik{},
}

// FlavourFor returns the renderer of a flavour.
func FlavourFor(f v1alpha1.Flavour) (Flavour, bool) {
	fl, ok := flavours[f]
	return fl, ok
}
