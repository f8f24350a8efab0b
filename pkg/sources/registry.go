package sources

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Available reports whether the seed serves p's API (always, when it needs no discovery).
func Available(p Provider) bool {
	return p.Discovery() == nil || p.Discovery().Available()
}

// WhenAvailable runs f once p's API is found in the seed, at once when it already is.
func WhenAvailable(p Provider, f func()) {
	if d := p.Discovery(); d != nil {
		d.OnFound(f)
		return
	}
	f()
}

// Registry is the cluster source providers of a seed controller. Order matters: a key is
// looked up in each provider in turn, and the first source found is the cluster's (a Cluster
// and a kubeconfig Secret of one name are one cluster too many, and the first keeps it).
type Registry []Provider

// For is the provider of kind; nil when none is registered.
func (r Registry) For(kind string) Provider {
	for _, p := range r {
		if p.Kind() == kind {
			return p
		}
	}
	return nil
}

// AddToScheme registers the types every provider reads.
func (r Registry) AddToScheme(s *runtime.Scheme) error {
	for _, p := range r {
		if err := p.AddToScheme(s); err != nil {
			return fmt.Errorf("%s: %w", p.Description(), err)
		}
	}
	return nil
}

// WatchAll adds each provider's watch to c once its API is found in the seed: an API installed
// after start-up is picked up without a restart. Events enqueue the keys of the sources'
// ClusterIngresses.
func (r Registry) WatchAll(mgr manager.Manager, c controller.Controller) {
	for _, p := range r {
		w := p.Watch()
		if w == nil {
			continue
		}
		WhenAvailable(p, func() {
			if err := c.Watch(source.Kind(mgr.GetCache(), w.Object, EventHandler(w), w.Predicates...)); err != nil {
				mgr.GetLogger().Error(err, "cannot watch "+p.Description()+"s")
			}
		})
	}
}

// EventHandler enqueues the ClusterIngress key of the object an event is about (for an update,
// of the object before and after, should they differ).
func EventHandler(w *Watch) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		if k, ok := w.Key(o); ok {
			return []reconcile.Request{{NamespacedName: k}}
		}
		return nil
	})
}
