// Package engagement is the engagement controller: it hands every ClusterIngress' kubeconfig to
// cluster access, and records why a cluster cannot be engaged.
package engagement

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/apidiscovery"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/conflicts"
	"github.com/shardgate/shardgate/pkg/controller/lifecycle"
	"github.com/shardgate/shardgate/pkg/controller/predicates"
	"github.com/shardgate/shardgate/pkg/controller/sharding"
)

// Config wires the engagement controller.
type Config struct {
	Registry               clusteraccess.Registry
	ClusterAPI, Kubermatic *apidiscovery.API
	// SecretNamespaces are the namespaces kubeconfig Secrets may register clusters from.
	SecretNamespaces []string
	// KubeconfigResync: how often Cluster API kubeconfigs are read again.
	KubeconfigResync time.Duration
	Concurrency      int
}

// Add registers the engagement controller.
func Add(mgr ctrl.Manager, cfg Config) error {
	nss := map[string]bool{}
	for _, ns := range cfg.SecretNamespaces {
		nss[ns] = true
	}
	r := &Reconciler{Client: mgr.GetClient(), KubeconfigSecrets: mgr.GetClient(), ClusterAPISecrets: mgr.GetAPIReader(),
		ClusterAPI: cfg.ClusterAPI, Kubermatic: cfg.Kubermatic, SecretNamespaces: nss, Resync: cfg.KubeconfigResync, Registry: cfg.Registry}
	b := ctrl.NewControllerManagedBy(mgr).Named("engagement").
		// Clusters are independent: one slow cluster must not queue the others behind it.
		WithOptions(controller.Options{MaxConcurrentReconciles: cfg.Concurrency}).
		For(&v1alpha1.ClusterIngress{}, builder.WithPredicates(predicates.MetadataOrSpecChanged)).
		// Reachability changes: a refused credential re-reads the kubeconfig at once.
		WatchesRawSource(source.Channel(cfg.Registry.Subscribe(0), &handler.EnqueueRequestForObject{}))
	if len(nss) > 0 {
		b = b.Watches(&corev1.Secret{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(lifecycle.HasLabel(v1alpha1.KubeconfigSecretLabel)))
	}
	c, err := b.WatchesRawSource(sharding.Changes()).Build(sharding.Only(conflicts.Retried("engagement", r)))
	if err != nil {
		return fmt.Errorf("engagement controller: %w", err)
	}
	lifecycle.WatchClustersWhenFound(mgr, cfg.ClusterAPI, c)
	lifecycle.WatchKubermaticWhenFound(mgr, cfg.Kubermatic, c)
	return nil
}
