// Package engagement is the engagement controller: it hands every ClusterIngress' kubeconfig to
// cluster access, and records why a cluster cannot be engaged.
package engagement

import (
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/kit"
	"github.com/shardgate/shardgate/pkg/predicates"
	"github.com/shardgate/shardgate/pkg/sources"
)

// Config wires the engagement controller.
type Config struct {
	Kit      kit.Config
	Registry clusteraccess.Registry
	// Sources are the cluster source providers.
	Sources sources.Registry
	// KubeconfigResync: how often kubeconfigs that are not watched are read again.
	KubeconfigResync time.Duration
	Concurrency      int
}

// Add registers the engagement controller; each source provider's objects are watched once its
// API is found in the seed (a source's change may change its kubeconfig or its readiness).
func Add(mgr ctrl.Manager, cfg Config) error {
	r := &Reconciler{Client: mgr.GetClient(), KubeconfigSecrets: mgr.GetClient(), UnwatchedSecrets: mgr.GetAPIReader(),
		Sources: cfg.Sources, Resync: cfg.KubeconfigResync, Registry: cfg.Registry}
	c, err := kit.New(mgr, "engagement", cfg.Kit).Concurrency(cfg.Concurrency).
		For(&v1alpha1.ClusterIngress{}, builder.WithPredicates(predicates.MetadataOrSpecChanged)).
		// Reachability changes: a refused credential re-reads the kubeconfig at once.
		WatchesRawSource(source.Channel(cfg.Registry.Subscribe(0), &handler.EnqueueRequestForObject{})).
		Build(r)
	if err != nil {
		return fmt.Errorf("engagement controller: %w", err)
	}
	cfg.Sources.WatchAll(mgr, c)
	return nil
}
