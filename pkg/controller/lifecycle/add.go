// Package lifecycle is the cluster lifecycle controller: one ClusterIngress per user cluster an
// IngressProfile selects (decided by sources.DecideLifecycle), removed only for a deliberate
// cause.
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controller/kit"
	"github.com/shardgate/shardgate/pkg/predicates"
	"github.com/shardgate/shardgate/pkg/sources"
)

// Config wires the lifecycle controller.
type Config struct {
	Kit         kit.Config
	DefaultZone string
	// Sources are the cluster source providers, in lookup order.
	Sources sources.Registry
	// RemovalGrace: how long a cluster's ClusterIngress outlives its source.
	RemovalGrace time.Duration
	Concurrency  int
	// Board takes SourceAvailable (cistatus.Lifecycle).
	Board *cistatus.Board
}

// Seed RBAC of the lifecycle controller's own objects; each source provider declares what it
// reads (pkg/sources).
// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=shardgate.io,resources=ingressprofiles,verbs=get;list;watch

// Add registers the lifecycle controller; each source provider's objects are watched once its
// API is found in the seed.
func Add(mgr ctrl.Manager, cfg Config) error {
	r := &Reconciler{Client: mgr.GetClient(), DefaultZone: cfg.DefaultZone, Sources: cfg.Sources,
		RemovalGrace: cfg.RemovalGrace, Clock: clock.RealClock{}, Board: cfg.Board}
	c, err := kit.New(mgr, "clusteringress", cfg.Kit).Concurrency(cfg.Concurrency).
		For(&v1alpha1.ClusterIngress{}, builder.WithPredicates(predicates.MetadataOrSpecChanged)).
		// A profile's spec, creation and deletion decide; its status (matchingClusters, written
		// every few seconds while clusters come) does not, and each write would wake every cluster.
		Watches(&v1alpha1.IngressProfile{}, handler.EnqueueRequestsFromMapFunc(allSources(mgr.GetClient(), cfg.Sources)),
			builder.WithPredicates(predicates.MetadataOrSpecChanged)).
		Build(r)
	if err != nil {
		return fmt.Errorf("clusteringress controller: %w", err)
	}
	cfg.Sources.WatchAll(mgr, c)
	return nil
}

// allSources maps a profile change to every cluster source and ClusterIngress, since selection
// is global.
func allSources(c client.Reader, providers sources.Registry) handler.MapFunc {
	keys := ClusterKeys(c, providers)
	return func(ctx context.Context, _ client.Object) []reconcile.Request {
		ks, _ := keys(ctx) // what could be listed; a failed list is retried by its informer's events
		reqs := make([]reconcile.Request, 0, len(ks))
		for _, k := range ks {
			reqs = append(reqs, reconcile.Request{NamespacedName: k})
		}
		return reqs
	}
}

// ClusterKeys lists the key of every cluster the lifecycle controller decides on: each source of
// every provider whose API the seed serves and that has something to watch, and each
// ClusterIngress (one whose source is gone still needs a decision), once each. A source without
// a ClusterIngress yet counts too: when clusters pass to a new replica, a cluster not created
// yet must reach its new owner as well. Lists that fail are reported together; the keys of the
// others are returned.
func ClusterKeys(c client.Reader, providers sources.Registry) func(context.Context) ([]types.NamespacedName, error) {
	return func(ctx context.Context) ([]types.NamespacedName, error) {
		seen := map[types.NamespacedName]bool{}
		var keys []types.NamespacedName
		add := func(k types.NamespacedName) {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
		var errs []error
		for _, p := range providers {
			w := p.Watch()
			if w == nil || !sources.Available(p) {
				continue
			}
			ks, err := w.Keys(ctx, c)
			if err != nil {
				errs = append(errs, fmt.Errorf("listing %ss: %w", p.Description(), err))
			}
			for _, k := range ks {
				add(k)
			}
		}
		cis := &v1alpha1.ClusterIngressList{}
		if err := c.List(ctx, cis, client.UnsafeDisableDeepCopy); err != nil {
			errs = append(errs, fmt.Errorf("listing ClusterIngresses: %w", err))
		}
		for _, x := range cis.Items {
			add(types.NamespacedName{Namespace: x.Namespace, Name: x.Name})
		}
		return keys, errors.Join(errs...)
	}
}
