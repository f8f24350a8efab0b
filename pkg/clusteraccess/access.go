// Package clusteraccess engages user clusters: one long-lived, small cache per cluster with a
// health probe and change subscriptions, started without ever blocking its caller, and the rules
// for what a kubeconfig may contain and what of a user cluster's answers may be repeated.
//
// Controllers depend on Access and Cluster; Engager implements them, Fake stands in for them in
// reconciler unit tests. The files: registry.go (engage, disengage, get, block), cluster.go (one
// cluster's first contact, cache and probe), events.go (change events and subscriptions),
// kinds.go (what is cached), kubeconfig.go (what a kubeconfig may hold), describe.go (fixed
// descriptions of failures), node_transform.go (what of a Node is kept).
package clusteraccess

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/shardgate/shardgate/pkg/routekinds"
)

// Access is what the controllers need of the engaged user clusters, by ClusterIngress key.
type Access interface {
	// Get returns key's engaged cluster.
	Get(key types.NamespacedName) (Cluster, bool)
	// Blocked returns why key cannot be engaged, if it cannot.
	Blocked(key types.NamespacedName) (State, bool)
	// Subscribe returns GenericEvents naming ClusterIngresses whose user cluster changed in one
	// of the interesting ways, or changed engagement state (always). Use with source.Channel.
	Subscribe(interest Change) <-chan event.GenericEvent
}

// Registry is Access plus what the engagement controller does: engage with a kubeconfig,
// record why a cluster cannot be engaged, disengage.
type Registry interface {
	Access
	Engage(key types.NamespacedName, kubeconfig []byte, s Settings) error
	Block(key types.NamespacedName, reason, message string)
	Disengage(key types.NamespacedName)
}

// Settings are what of a cluster's ClusterIngress its engagement is made with, found out at first
// contact like the Capabilities: a change re-engages the cluster, as a new kubeconfig does.
type Settings struct {
	// GatewayAPI: Gateway API's CRDs are installed where absent and its kinds cached where served
	// (spec.gatewayAPI: Enabled). Off, nothing of it is installed or cached.
	GatewayAPI bool
}

// Cluster is one engaged user cluster as the controllers see it.
type Cluster interface {
	// State is the engagement's phase now; its message is a fixed description.
	State() State
	// Capabilities the cluster's API server offers (zero before the first contact).
	Capabilities() Capabilities
	// Synced: the cache has completed its first list, so reads are complete.
	Synced() bool
	// Observable: synced and the API server answers. Controllers change nothing in a cluster
	// they cannot observe.
	Observable() bool
	// Nodes lists the cached (trimmed) nodes; it never blocks on the network.
	Nodes(ctx context.Context) ([]corev1.Node, error)
	// Reader reads the cache: nodes, routes, Shardgate's objects.
	Reader() client.Reader
	// RouteKinds are the kinds of route the cache holds: the ones to allocate, check and clean up.
	// A kind whose routes the cluster does not serve is not among them, and each kind's Cached
	// holds only what the cluster serves (Capabilities.Unserved); nil before the first contact.
	RouteKinds() routekinds.Registry
	// Writer writes to the API server, each request bounded by a timeout.
	Writer() client.Client
	// Identity is the user Shardgate acts as in the cluster; its error is a fixed description.
	Identity(ctx context.Context) (string, error)
	// TakePendingChange returns when the oldest unpublished node change was observed, and clears it.
	TakePendingChange() time.Time
	// Undecided counts the routes added or changed that carried no allocation decision of
	// Shardgate's, since the engagement began. An allocation
	// pass that sees it grow leaves its remaining statuses to the next pass, so that a new route
	// is not served only after thousands of other routes' statuses.
	Undecided() uint64
}

var (
	_ Registry = (*Engager)(nil)
	_ Cluster  = (*engagedView)(nil)
)
