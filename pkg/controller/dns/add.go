// Package dns is the DNS controller: one external-dns DNSEndpoint per user cluster whose records
// follow the cluster's shard targets (decided by pkg/dnsrecords), and the cluster's
// reachability, DNS and Ready conditions.
package dns

import (
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controller/kit"
	"github.com/shardgate/shardgate/pkg/dnsrecords"
	"github.com/shardgate/shardgate/pkg/predicates"
)

// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses/finalizers,verbs=update
// +kubebuilder:rbac:groups=externaldns.k8s.io,resources=dnsendpoints,verbs=get;list;watch;create;update;patch;delete

// Config wires the DNS controller.
type Config struct {
	Kit    kit.Config
	Access clusteraccess.Access
	// ServedZones are the zones the seed's external-dns publishes (empty: any).
	ServedZones []string
	// Concurrency is how many clusters are reconciled at once.
	Concurrency int
	// Verifier checks the published answers at the zone's authoritative servers (nil: off).
	Verifier *Verifier
	// Board takes this controller's part of the status.
	Board *cistatus.Board
	// DNSShares: how many seed external-dns instances share the DNSEndpoints (label per share).
	DNSShares int
}

// Add registers the DNS controller.
func Add(mgr ctrl.Manager, cfg Config) error {
	r := &Reconciler{Client: mgr.GetClient(), Access: cfg.Access, ServedZones: cfg.ServedZones,
		Clock: clock.RealClock{}, Verifier: cfg.Verifier, Board: cfg.Board, DNSShares: cfg.DNSShares}
	// Status writes wait for the records of the changes queued here (records first in a burst).
	pending := newPendingRecords()
	cfg.Board.SetYield(pending.Hold)
	return kit.New(mgr, "dns", cfg.Kit).Concurrency(cfg.Concurrency).
		// Spec, deletion, the domain the identity controller decided and other controllers' records
		// its records follow; not its own status-only writes (they would start a pass per pass).
		For(&v1alpha1.ClusterIngress{}, builder.WithPredicates(r.notOwnStatus())).
		// external-dns writes DNSEndpoint status; only spec changes (or deletion) matter here, and
		// not this controller's own updates.
		Owns(&dnsrecords.DNSEndpoint{}, builder.WithPredicates(predicate.GenerationChangedPredicate{}, r.notOwnUpdate())).
		// Records follow nodes and router pods/Services; Ingress churn does not wake this.
		WatchesRawSource(source.Channel(cfg.Access.Subscribe(clusteraccess.ChangeNodes|clusteraccess.ChangeManaged), pending.enqueue())).
		// The mark of a queued change clears whoever serves the cluster: a cluster another replica
		// serves must not hold this replica's status writes.
		Around(pending.clearing).
		Complete(r)
}

// notOwnStatus drops ClusterIngress updates that change nothing but status this controller does
// not read: spec, metadata, the identity controller's decision when this controller has not acted
// on it yet (a new cluster's first write carries the decision it published for: no second pass),
// and the other controllers' records its records follow (VIPs, held routed IPs, claims) pass.
func (r *Reconciler) notOwnStatus() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*v1alpha1.ClusterIngress)
		n, ok2 := e.ObjectNew.(*v1alpha1.ClusterIngress)
		if !ok1 || !ok2 || o.Generation != n.Generation || o.DeletionTimestamp != n.DeletionTimestamp || len(o.Finalizers) != len(n.Finalizers) {
			return true
		}
		id := predicates.IdentityKey(n)
		if id != predicates.IdentityKey(o) && !r.actedOn(client.ObjectKeyFromObject(n), id) {
			return true // records are published only for the domain the identity controller gave
		}
		if predicates.VIPKey(o) != predicates.VIPKey(n) {
			return true // a VIP shard's records are its VIPs
		}
		if heldRoutedIPsKey(o) != heldRoutedIPsKey(n) {
			return true // a RoutedIP shard's records are its held addresses
		}
		if predicates.ClaimsKey(o) != predicates.ClaimsKey(n) {
			return true // a claimed shard has records of its own
		}
		return false
	}}
}
