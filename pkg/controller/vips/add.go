// Package vips is the VIP controller: it allocates the VIPs and VRRP router IDs of every VIP
// shard, per L2 domain (pkg/vip plans), records them in status.vips, observes which node holds
// each (the VIP agents' Leases in the user cluster) and reports VIPsAvailable. The shard
// controller renders keepalived from status.vips; the DNS controller publishes them.
package vips

import (
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controller/kit"
	"github.com/shardgate/shardgate/pkg/predicates"
)

// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses,verbs=get;list;watch
// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses/status,verbs=get;update;patch

// PlacementGroup is the L2 domain whose VIPs a cluster takes part in ("" for none), for several
// replicas (--sharding): every cluster of one domain is served by one replica, so the domain's
// planner (this controller's single worker there) sees every member's node addresses and
// allocates from the pool alone. The cost: a domain's clusters are not spread over replicas.
func PlacementGroup(ci *v1alpha1.ClusterIngress) string {
	if len(vipShards(ci)) == 0 && len(ci.Status.VIPs) == 0 {
		return ""
	}
	return "vip-domain/" + ci.Spec.VIP.L2Domain
}

// Config wires the VIP controller.
type Config struct {
	Kit    kit.Config
	Access clusteraccess.Access
	// Board takes the controller's part of the status.
	Board *cistatus.Board
}

// Add registers the VIP controller. One worker: a domain's allocation is decided by one
// reconcile at a time, so two clusters are never given the same free address at once.
func Add(mgr ctrl.Manager, cfg Config) error {
	r := &Reconciler{Client: mgr.GetClient(), Access: cfg.Access, Clock: clock.RealClock{}, Board: cfg.Board}
	return kit.New(mgr, "vips", cfg.Kit).Concurrency(1).
		For(&v1alpha1.ClusterIngress{}, builder.WithPredicates(predicates.MetadataOrSpecChanged)).
		// Node addresses (never given as VIPs), router pods (homes follow the nodes they run on)
		// and the agents' reports of who holds a VIP.
		WatchesRawSource(source.Channel(
			cfg.Access.Subscribe(clusteraccess.ChangeNodes|clusteraccess.ChangeManaged|clusteraccess.ChangeVIPReports),
			&handler.EnqueueRequestForObject{})).
		Complete(r)
}
