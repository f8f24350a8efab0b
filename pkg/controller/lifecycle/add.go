// Package lifecycle is the cluster lifecycle controller: one ClusterIngress per user cluster an
// IngressProfile selects (decided by sources.DecideLifecycle), removed only for a deliberate
// cause.
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/apidiscovery"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controller/conflicts"
	"github.com/shardgate/shardgate/pkg/controller/predicates"
	"github.com/shardgate/shardgate/pkg/controller/sharding"
	"github.com/shardgate/shardgate/pkg/sources"
)

// Config wires the lifecycle controller.
type Config struct {
	DefaultZone string
	// ClusterAPI discovers the seed's Cluster API, Kubermatic Kubermatic's (Add adds them to
	// the manager).
	ClusterAPI, Kubermatic *apidiscovery.API
	// SecretNamespaces are the namespaces kubeconfig Secrets may register clusters from.
	SecretNamespaces []string
	// RemovalGrace: how long a cluster's ClusterIngress outlives its source.
	RemovalGrace time.Duration
	Concurrency  int
	// Board takes SourceAvailable (cistatus.Lifecycle).
	Board *cistatus.Board
}

// KubeconfigSecretCache restricts the manager's Secret cache to kubeconfig Secrets in the
// namespaces the operator listed: the controller never caches the seed's other Secrets.
func KubeconfigSecretCache(namespaces []string) cache.ByObject {
	req, _ := labels.NewRequirement(v1alpha1.KubeconfigSecretLabel, selection.Exists, nil)
	nss := map[string]cache.Config{}
	for _, ns := range namespaces {
		nss[ns] = cache.Config{}
	}
	return cache.ByObject{Label: labels.NewSelector().Add(*req), Namespaces: nss}
}

// Seed RBAC. Secrets: get (a Cluster API kubeconfig by name); list and watch only in the
// kubeconfig Secret namespaces, granted there by the chart's Roles (see docs/security.md).
// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=shardgate.io,resources=ingressprofiles,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=kubermatic.k8c.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// Add registers the lifecycle controller and the Cluster API discovery.
func Add(mgr ctrl.Manager, cfg Config) error {
	nss := map[string]bool{}
	for _, ns := range cfg.SecretNamespaces {
		nss[ns] = true
	}
	r := &Reconciler{Client: mgr.GetClient(), DefaultZone: cfg.DefaultZone, ClusterAPI: cfg.ClusterAPI, Kubermatic: cfg.Kubermatic,
		SecretNamespaces: nss, RemovalGrace: cfg.RemovalGrace, Clock: clock.RealClock{}, Board: cfg.Board}
	b := ctrl.NewControllerManagedBy(mgr).Named("clusteringress").
		WithOptions(controller.Options{MaxConcurrentReconciles: cfg.Concurrency}).
		For(&v1alpha1.ClusterIngress{}, builder.WithPredicates(predicates.MetadataOrSpecChanged)).
		// A profile's spec, creation and deletion decide; its status (matchingClusters, written
		// every few seconds while clusters come) does not, and each write would wake every cluster.
		Watches(&v1alpha1.IngressProfile{}, handler.EnqueueRequestsFromMapFunc(allSources(mgr.GetClient(), cfg.ClusterAPI, cfg.Kubermatic, len(nss) > 0)),
			builder.WithPredicates(predicates.MetadataOrSpecChanged))
	if len(nss) > 0 { // no namespaces listed: no Secret is ever watched (an empty list would mean all)
		b = b.Watches(&corev1.Secret{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(HasLabel(v1alpha1.KubeconfigSecretLabel)))
	}
	c, err := b.WatchesRawSource(sharding.Changes()).Build(sharding.Only(conflicts.Retried("clusteringress", r)))
	if err != nil {
		return fmt.Errorf("clusteringress controller: %w", err)
	}
	// Cluster API may be installed after start-up: its Clusters are watched once it is found.
	WatchClustersWhenFound(mgr, cfg.ClusterAPI, c)
	WatchKubermaticWhenFound(mgr, cfg.Kubermatic, c)
	if err := mgr.Add(cfg.Kubermatic); err != nil {
		return err
	}
	return mgr.Add(cfg.ClusterAPI)
}

// WatchKubermaticWhenFound adds a watch of Kubermatic Clusters to c once Kubermatic is found,
// each mapped to its ClusterIngress' key (the cluster's seed namespace and its name; none before
// Kubermatic has given it a namespace).
func WatchKubermaticWhenFound(mgr ctrl.Manager, kkp *apidiscovery.API, c controller.Controller) {
	kkp.OnFound(func() {
		toKey := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			kc, ok := o.(*sources.KubermaticCluster)
			if !ok || kc.Status.NamespaceName == "" {
				return nil
			}
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: kc.Status.NamespaceName, Name: kc.Name}}}
		})
		if err := c.Watch(source.Kind(mgr.GetCache(), client.Object(&sources.KubermaticCluster{}), toKey)); err != nil {
			mgr.GetLogger().Error(err, "cannot watch Kubermatic Clusters")
		}
	})
}

// WatchClustersWhenFound adds a watch of Cluster API Clusters to c once Cluster API is found.
func WatchClustersWhenFound(mgr ctrl.Manager, capi *apidiscovery.API, c controller.Controller) {
	capi.OnFound(func() {
		if err := c.Watch(source.Kind(mgr.GetCache(), client.Object(&clusterv1.Cluster{}), &handler.EnqueueRequestForObject{})); err != nil {
			mgr.GetLogger().Error(err, "cannot watch Cluster API Clusters")
		}
	})
}

// HasLabel passes objects that carry the label key.
func HasLabel(key string) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := o.GetLabels()[key]
		return ok
	})
}

// allSources maps a profile change to every cluster source and ClusterIngress, since selection
// is global.
func allSources(c client.Reader, capi, kkp *apidiscovery.API, secrets bool) handler.MapFunc {
	keys := ClusterKeys(c, capi, kkp, secrets)
	return func(ctx context.Context, _ client.Object) []reconcile.Request {
		ks, _ := keys(ctx) // what could be listed; a failed list is retried by its informer's events
		reqs := make([]reconcile.Request, 0, len(ks))
		for _, k := range ks {
			reqs = append(reqs, reconcile.Request{NamespacedName: k})
		}
		return reqs
	}
}

// ClusterKeys lists the key of every cluster the lifecycle controller decides on: each Cluster
// API and Kubermatic Cluster, each kubeconfig Secret (when Secrets register clusters) and each
// ClusterIngress (one whose source is gone still needs a decision), once each. A source without
// a ClusterIngress yet counts too: when sharding hands clusters to a new replica, a cluster not
// created yet must reach its new owner as well. Lists that fail are reported together; the keys
// of the others are returned.
func ClusterKeys(c client.Reader, capi, kkp *apidiscovery.API, secrets bool) func(context.Context) ([]types.NamespacedName, error) {
	return func(ctx context.Context) ([]types.NamespacedName, error) {
		seen := map[types.NamespacedName]bool{}
		var keys []types.NamespacedName
		add := func(ns, name string) {
			k := types.NamespacedName{Namespace: ns, Name: name}
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
		var errs []error
		if capi.Available() {
			cl := &clusterv1.ClusterList{}
			if err := c.List(ctx, cl, client.UnsafeDisableDeepCopy); err != nil {
				errs = append(errs, fmt.Errorf("listing Cluster API Clusters: %w", err))
			}
			for _, x := range cl.Items {
				add(x.Namespace, x.Name)
			}
		}
		if kkp.Available() {
			kl := &sources.KubermaticClusterList{}
			if err := c.List(ctx, kl, client.UnsafeDisableDeepCopy); err != nil {
				errs = append(errs, fmt.Errorf("listing Kubermatic Clusters: %w", err))
			}
			for _, x := range kl.Items {
				if x.Status.NamespaceName != "" {
					add(x.Status.NamespaceName, x.Name)
				}
			}
		}
		if secrets {
			sl := &corev1.SecretList{} // the cache's (kubeconfig Secrets only); never copied, never logged
			if err := c.List(ctx, sl, client.HasLabels{v1alpha1.KubeconfigSecretLabel}, client.UnsafeDisableDeepCopy); err != nil {
				errs = append(errs, fmt.Errorf("listing kubeconfig Secrets: %w", err))
			}
			for _, x := range sl.Items {
				add(x.Namespace, x.Name)
			}
		}
		cis := &v1alpha1.ClusterIngressList{}
		if err := c.List(ctx, cis, client.UnsafeDisableDeepCopy); err != nil {
			errs = append(errs, fmt.Errorf("listing ClusterIngresses: %w", err))
		}
		for _, x := range cis.Items {
			add(x.Namespace, x.Name)
		}
		return keys, errors.Join(errs...)
	}
}
