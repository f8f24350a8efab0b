// Package gate lets several controller replicas share the user clusters of one seed. Each
// replica renews a Lease of its own; every replica computes from the live Leases which replica
// serves which cluster (pkg/replicas.Owner); and a per-cluster Lease fences the hand-over: a
// replica works for a cluster only while it holds that cluster's Lease and its own Lease is
// fresh, and gives the cluster's Lease back only once none of its reconciles for the cluster is
// still running. So two replicas never write for one cluster, during a hand-over either: the new
// owner waits until the old one released (or its own Lease expired, when it died). Every write
// of a gated reconcile (Writes) re-reads the fence first and is refused once it names another
// holder or was taken again. Cluster-scoped keys (profiles, routed-IP classes) are fenced the same
// way, and a Group places keys together (one L2 domain's VIP clusters) on one replica.
//
// The Owner is passed to every controller explicitly (pkg/controller/kit applies Only and
// Changes to each one it builds); a nil Owner is one replica serving everything, and Only and
// Changes change nothing then.
package gate

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Only runs r for the requests this replica serves (and holds the fence of); others end at once,
// and a cluster whose fence is not free yet is tried again shortly. With a nil Owner (one
// replica) it is r.
func (o *Owner) Only(r reconcile.Reconciler) reconcile.Reconciler {
	if o == nil {
		return r
	}
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		// Work for a cluster stops when this replica's Lease lapses (its fences may be another
		// replica's then): ctx ends, and requests not sent yet fail instead of writing.
		ctx, done, verdict := o.enter(ctx, req.NamespacedName)
		switch verdict {
		case notMine:
			return reconcile.Result{}, nil
		case waiting:
			return reconcile.Result{RequeueAfter: time.Second}, nil
		}
		defer done()
		return r.Reconcile(ctx, req)
	})
}

// Changes is a source of the ClusterIngresses whose owner changed, for a controller's
// WatchesRawSource: h maps each to the controller's requests (the cluster itself, or for a
// controller of cluster-scoped objects such as a routed-IP class's firewall, every class), so
// that a key's new owner starts on it at once. With a nil Owner it never fires.
func (o *Owner) Changes(h handler.EventHandler) source.Source {
	if o == nil {
		return source.Channel(make(chan event.GenericEvent), h)
	}
	return source.Channel(o.subscribe(), h)
}
