// Package kit builds Shardgate's controllers. What every controller needs besides its own logic
// is applied here, once, so that the next controller cannot forget it:
//
//   - the replica gate (pkg/replicas/gate): with several replicas, a request runs only on the
//     replica that serves its key, under the key's fence, and a controller of ClusterIngresses
//     hears of the clusters whose owner changed;
//   - the conflict retry (pkg/conflicts): a write that lost an optimistic-lock race is a quiet
//     requeue, counted in shardgate_write_conflicts_total under the controller's name.
//
// The controller's name given to New is also the name of controller-runtime's own metrics and
// logs for it. A controller package's Add builds its controller with New and ends with Complete
// or Build; it never wraps its reconciler itself. The gate comes in Config, never from a global:
// what a controller is gated by is what its caller passed.
package kit

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/conflicts"
	"github.com/shardgate/shardgate/pkg/replicas/gate"
)

// Config is what every controller's Config carries for the kit (its field Kit); the manager
// builds one and hands the same to every controller.
type Config struct {
	// Replicas is this replica's share of the seed when several replicas share it (--sharding):
	// requests run only for the keys this replica serves and holds the fence of. nil: one
	// replica serves every key.
	Replicas *gate.Owner
}

// Builder is controller-runtime's builder, with the kit's wrappers applied when it completes.
// It offers only the calls Shardgate's controllers use: none that would leave a way around them.
type Builder struct {
	name    string
	cfg     Config
	b       *builder.Builder
	changes handler.EventHandler // what a change of owners enqueues; nil: nothing
	around  func(reconcile.Reconciler) reconcile.Reconciler
}

// New starts building the controller name.
func New(mgr ctrl.Manager, name string, cfg Config) *Builder {
	return &Builder{name: name, cfg: cfg, b: ctrl.NewControllerManagedBy(mgr).Named(name)}
}

// Concurrency is how many keys are reconciled at once (default one). Clusters are independent:
// one slow cluster must not queue the others behind it.
func (b *Builder) Concurrency(n int) *Builder {
	b.b = b.b.WithOptions(controller.Options{MaxConcurrentReconciles: n})
	return b
}

// For is the kind the controller reconciles. A controller of ClusterIngresses is also told of
// the clusters whose owner changed (with several replicas), so their new owner starts on them at
// once; one of another kind says with OwnerChanges what such a change means for its keys.
func (b *Builder) For(obj client.Object, opts ...builder.ForOption) *Builder {
	if _, ok := obj.(*v1alpha1.ClusterIngress); ok && b.changes == nil {
		b.changes = &handler.EnqueueRequestForObject{}
	}
	b.b = b.b.For(obj, opts...)
	return b
}

// OwnerChanges maps the clusters whose owner changed to this controller's keys, for a controller
// of keys that are not clusters (a routed-IP class's firewall: every class). Without it such a
// controller starts a key it took over at the key's next event.
func (b *Builder) OwnerChanges(h handler.EventHandler) *Builder {
	b.changes = h
	return b
}

// Owns is controller-runtime's Owns.
func (b *Builder) Owns(obj client.Object, opts ...builder.OwnsOption) *Builder {
	b.b = b.b.Owns(obj, opts...)
	return b
}

// Watches is controller-runtime's Watches.
func (b *Builder) Watches(obj client.Object, h handler.EventHandler, opts ...builder.WatchesOption) *Builder {
	b.b = b.b.Watches(obj, h, opts...)
	return b
}

// WatchesRawSource is controller-runtime's WatchesRawSource.
func (b *Builder) WatchesRawSource(src source.Source) *Builder {
	b.b = b.b.WatchesRawSource(src)
	return b
}

// Around wraps the reconciler outside the kit's wrappers: w sees every request, those another
// replica serves included (the DNS controller clears its mark of a queued change whoever serves
// the cluster, or the mark would hold this replica's status writes). w must pass each request on.
func (b *Builder) Around(w func(reconcile.Reconciler) reconcile.Reconciler) *Builder {
	b.around = w
	return b
}

// Complete builds the controller around r and adds it to the manager.
func (b *Builder) Complete(r reconcile.Reconciler) error {
	_, err := b.Build(r)
	return err
}

// Build is Complete, returning the controller for watches added later (a source whose API is
// found after the start).
func (b *Builder) Build(r reconcile.Reconciler) (controller.Controller, error) {
	if b.cfg.Replicas != nil && b.changes != nil {
		b.b = b.b.WatchesRawSource(b.cfg.Replicas.Changes(b.changes))
	}
	return b.b.Build(b.wrapped(r))
}

// wrapped is r as every controller runs it. The gate comes first (only Around is outside it): a
// request another replica serves ends before anything runs and leaves no backoff behind in the
// conflict retry; a requeued conflict comes back as a new request, gated again.
func (b *Builder) wrapped(r reconcile.Reconciler) reconcile.Reconciler {
	r = b.cfg.Replicas.Only(conflicts.Retried(b.name, r))
	if b.around != nil {
		r = b.around(r)
	}
	return r
}
