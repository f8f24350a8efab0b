// Package lifecycle is the cluster lifecycle controller: one ClusterIngress per user cluster an
// IngressProfile selects (decided by sources.DecideLifecycle), removed only for a deliberate
// cause.
package lifecycle

import (
	"context"
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
	// Board takes SourceAvailable (the DNS controller writes it).
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
		Watches(&v1alpha1.IngressProfile{}, handler.EnqueueRequestsFromMapFunc(allSources(mgr.GetClient(), cfg.ClusterAPI, cfg.Kubermatic, len(nss) > 0)))
	if len(nss) > 0 { // no namespaces listed: no Secret is ever watched (an empty list would mean all)
		b = b.Watches(&corev1.Secret{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(HasLabel(v1alpha1.KubeconfigSecretLabel)))
	}
	c, err := b.WatchesRawSource(sharding.Changes()).Build(sharding.Only(r))
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
func allSources(c client.Client, capi, kkp *apidiscovery.API, secrets bool) handler.MapFunc {
	return func(ctx context.Context, _ client.Object) []reconcile.Request {
		var reqs []reconcile.Request
		add := func(ns, name string) {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
		}
		if capi.Available() {
			cl := &clusterv1.ClusterList{}
			if err := c.List(ctx, cl); err == nil {
				for _, x := range cl.Items {
					add(x.Namespace, x.Name)
				}
			}
		}
		if kkp.Available() {
			kl := &sources.KubermaticClusterList{}
			if err := c.List(ctx, kl); err == nil {
				for _, x := range kl.Items {
					if x.Status.NamespaceName != "" {
						add(x.Status.NamespaceName, x.Name)
					}
				}
			}
		}
		if secrets {
			sl := &corev1.SecretList{}
			if err := c.List(ctx, sl, client.HasLabels{v1alpha1.KubeconfigSecretLabel}); err == nil {
				for _, x := range sl.Items {
					add(x.Namespace, x.Name)
				}
			}
		}
		// ClusterIngresses whose source is gone still need a decision (frozen or removed).
		cis := &v1alpha1.ClusterIngressList{}
		if err := c.List(ctx, cis); err == nil {
			for _, x := range cis.Items {
				add(x.Namespace, x.Name)
			}
		}
		return reqs
	}
}
