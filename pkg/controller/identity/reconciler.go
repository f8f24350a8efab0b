package identity

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusterid"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
)

// Reconciler decides one ClusterIngress' identity: it gathers every claim to the domain it asks
// for and to the one it holds (claims.go), decides (clusterid.Decide) and posts
// status.clusterID, status.domain and DomainAssigned to the board.
type Reconciler struct {
	Client client.Client
	// ServedZones are the zones the seed's external-dns publishes (empty: any).
	ServedZones []string
	// Board takes this controller's part of the status (cistatus.Identity).
	Board *cistatus.Board
	// Fence judges grants in the API server when several replicas decide (nil: one replica).
	Fence *DomainFence
}

// Reconcile gathers, decides and posts.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ci := &v1alpha1.ClusterIngress{}
	if err := r.Client.Get(ctx, req.NamespacedName, ci); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if ci.DeletionTimestamp != nil {
		// It holds its domain until it is gone: the DNS controller's finalizer removes its
		// records first, and nobody may publish them meanwhile.
		return ctrl.Result{}, nil
	}
	r.Board.Overlay(ci)
	in, err := r.gather(ctx, ci)
	if err != nil {
		return ctrl.Result{}, err
	}
	d := clusterid.Decide(in)
	var result ctrl.Result
	if r.Fence != nil && d.Domain != "" && d.Domain != in.HeldDomain {
		ok, holder, err := r.Fence.Take(ctx, in.Self, d.Domain)
		if err != nil {
			return ctrl.Result{}, err
		}
		if !ok && holder == "" {
			return ctrl.Result{RequeueAfter: time.Second}, nil // lost a race to take it; who won shows soon
		}
		if !ok {
			// Looked at again once a grant in flight would have been written (Leases are not
			// watched): a holder that only asked then no longer keeps it.
			result = ctrl.Result{RequeueAfter: grantInFlight}
		}
		if !ok {
			// Granted on another replica, whose status this cache does not show yet: that
			// cluster holds it, whatever its age.
			if k, valid := parseKey(holder); valid {
				in.AskedClaims = append(in.AskedClaims, clusterid.Claim{Key: k, Held: true})
			}
			d = clusterid.Decide(in)
		}
	}
	if r.Fence != nil && in.HeldDomain != "" && d.Domain != in.HeldDomain {
		if err := r.Fence.Release(ctx, in.Self, in.HeldDomain); err != nil {
			return ctrl.Result{}, err
		}
	}
	ci.Status.ClusterID, ci.Status.Domain = d.ClusterID, d.Domain
	d.Assigned.ObservedGeneration = ci.Generation
	meta.SetStatusCondition(&ci.Status.Conditions, d.Assigned)
	r.Board.Post(ctx, ci, cistatus.Identity)
	return result, nil
}
