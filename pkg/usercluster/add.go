package usercluster

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
)

// Config wires the user-cluster controllers into a manager.
type Config struct {
	DefaultZone string
	// ClusterAPI discovers the seed's Cluster API (it must be added to the manager as well).
	ClusterAPI *ClusterAPI
	// SecretNamespaces are the namespaces kubeconfig Secrets may register clusters from.
	SecretNamespaces []string
	// RemovalGrace: how long a cluster's ClusterIngress outlives its source.
	RemovalGrace time.Duration
	// KubeconfigResync: how often Cluster API kubeconfigs are read again.
	KubeconfigResync time.Duration
	Engager          *Engager
	// Concurrency is how many clusters each controller reconciles at once.
	Concurrency int
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
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// Add registers the ClusterIngress and engagement controllers.
func Add(mgr ctrl.Manager, cfg Config) error {
	nss := map[string]bool{}
	for _, ns := range cfg.SecretNamespaces {
		nss[ns] = true
	}
	lifecycle := &ClusterIngressReconciler{Client: mgr.GetClient(), DefaultZone: cfg.DefaultZone, ClusterAPI: cfg.ClusterAPI,
		SecretNamespaces: nss, RemovalGrace: cfg.RemovalGrace, Clock: clock.RealClock{}}
	lb := ctrl.NewControllerManagedBy(mgr).Named("clusteringress").
		WithOptions(controller.Options{MaxConcurrentReconciles: cfg.Concurrency}).
		For(&v1alpha1.ClusterIngress{}).
		Watches(&v1alpha1.IngressProfile{}, handler.EnqueueRequestsFromMapFunc(allSources(mgr.GetClient(), cfg.ClusterAPI, len(nss) > 0)))
	if len(nss) > 0 { // no namespaces listed: no Secret is ever watched (an empty list would mean all)
		lb = lb.Watches(&corev1.Secret{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(hasLabel(v1alpha1.KubeconfigSecretLabel)))
	}
	lc, err := lb.Build(lifecycle)
	if err != nil {
		return fmt.Errorf("clusteringress controller: %w", err)
	}

	eng := &EngagementReconciler{Client: mgr.GetClient(), KubeconfigSecrets: mgr.GetClient(), ClusterAPISecrets: mgr.GetAPIReader(),
		ClusterAPI: cfg.ClusterAPI, SecretNamespaces: nss, Resync: cfg.KubeconfigResync, Engager: cfg.Engager}
	eb := ctrl.NewControllerManagedBy(mgr).Named("engagement").
		// Clusters are independent: one slow cluster must not queue the others behind it.
		WithOptions(controller.Options{MaxConcurrentReconciles: cfg.Concurrency}).
		For(&v1alpha1.ClusterIngress{}).
		// Reachability changes: a refused credential re-reads the kubeconfig at once.
		WatchesRawSource(source.Channel(cfg.Engager.Subscribe(0), &handler.EnqueueRequestForObject{}))
	if len(nss) > 0 {
		eb = eb.Watches(&corev1.Secret{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(hasLabel(v1alpha1.KubeconfigSecretLabel)))
	}
	ec, err := eb.Build(eng)
	if err != nil {
		return fmt.Errorf("engagement controller: %w", err)
	}
	// Cluster API may be installed after start-up: its Clusters are watched once it is found.
	cfg.ClusterAPI.OnFound(func() {
		for _, c := range []controller.Controller{lc, ec} {
			if err := c.Watch(source.Kind(mgr.GetCache(), client.Object(&clusterv1.Cluster{}), &handler.EnqueueRequestForObject{})); err != nil {
				mgr.GetLogger().Error(err, "cannot watch Cluster API Clusters")
			}
		}
	})
	if err := mgr.Add(cfg.ClusterAPI); err != nil {
		return err
	}
	return mgr.Add(cfg.Engager)
}

func hasLabel(key string) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := o.GetLabels()[key]
		return ok
	})
}

// allSources maps a profile change to every cluster source, since selection is global.
func allSources(c client.Client, capi *ClusterAPI, secrets bool) handler.MapFunc {
	return func(ctx context.Context, _ client.Object) []reconcile.Request {
		var reqs []reconcile.Request
		if capi.Available() {
			cl := &clusterv1.ClusterList{}
			if err := c.List(ctx, cl); err == nil {
				for _, x := range cl.Items {
					reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: x.Namespace, Name: x.Name}})
				}
			}
		}
		if secrets {
			sl := &corev1.SecretList{}
			if err := c.List(ctx, sl, client.HasLabels{v1alpha1.KubeconfigSecretLabel}); err == nil {
				for _, x := range sl.Items {
					reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: x.Namespace, Name: x.Name}})
				}
			}
		}
		// ClusterIngresses whose source is gone still need a decision (frozen or removed).
		cis := &v1alpha1.ClusterIngressList{}
		if err := c.List(ctx, cis); err == nil {
			for _, x := range cis.Items {
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: x.Namespace, Name: x.Name}})
			}
		}
		return reqs
	}
}
