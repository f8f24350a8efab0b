package usercluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
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
	// ClusterAPI: the seed serves cluster.x-k8s.io/v1beta2 Clusters (see HasClusterAPI).
	ClusterAPI bool
	Engager    *Engager
}

// KubeconfigSecretSelector restricts the manager's Secret cache to kubeconfig Secrets: the
// controller never caches the seed's other Secrets.
func KubeconfigSecretSelector() labels.Selector {
	req, _ := labels.NewRequirement(v1alpha1.KubeconfigSecretLabel, selection.Exists, nil)
	return labels.NewSelector().Add(*req)
}

// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=shardgate.io,resources=ingressprofiles,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch

// Add registers the ClusterIngress and engagement controllers.
func Add(mgr ctrl.Manager, cfg Config) error {
	sync := &ClusterIngressReconciler{Client: mgr.GetClient(), DefaultZone: cfg.DefaultZone, ClusterAPI: cfg.ClusterAPI}
	b := ctrl.NewControllerManagedBy(mgr).Named("clusteringress").
		For(&v1alpha1.ClusterIngress{}).
		Watches(&corev1.Secret{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(hasLabel(v1alpha1.KubeconfigSecretLabel))).
		Watches(&v1alpha1.IngressProfile{}, handler.EnqueueRequestsFromMapFunc(allSources(mgr.GetClient(), cfg.ClusterAPI)))
	if cfg.ClusterAPI {
		b = b.Watches(&clusterv1.Cluster{}, &handler.EnqueueRequestForObject{})
	}
	if err := b.Complete(sync); err != nil {
		return fmt.Errorf("clusteringress controller: %w", err)
	}

	eng := &EngagementReconciler{Client: mgr.GetClient(), KubeconfigSecrets: mgr.GetClient(), Engager: cfg.Engager}
	eb := ctrl.NewControllerManagedBy(mgr).Named("engagement").
		// Clusters are independent: one slow cluster must not queue the others behind it.
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		For(&v1alpha1.ClusterIngress{}).
		Watches(&corev1.Secret{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(hasLabel(v1alpha1.KubeconfigSecretLabel)))
	if cfg.ClusterAPI {
		// Cluster API's kubeconfig Secrets carry cluster.x-k8s.io/cluster-name, not our label: a
		// second small cache holds just those.
		req, _ := labels.NewRequirement(clusterv1.ClusterNameLabel, selection.Exists, nil)
		capiSecrets, err := cache.New(mgr.GetConfig(), cache.Options{
			Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
			DefaultTransform: cache.TransformStripManagedFields(),
			ByObject:         map[client.Object]cache.ByObject{&corev1.Secret{}: {Label: labels.NewSelector().Add(*req)}},
		})
		if err != nil {
			return err
		}
		if err := mgr.Add(capiSecrets); err != nil {
			return err
		}
		eng.ClusterAPISecrets = capiSecrets
		eb = eb.Watches(&clusterv1.Cluster{}, &handler.EnqueueRequestForObject{}).
			WatchesRawSource(source.Kind(capiSecrets, &corev1.Secret{}, handler.TypedEnqueueRequestsFromMapFunc(
				func(_ context.Context, s *corev1.Secret) []reconcile.Request {
					return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: s.Namespace, Name: s.Labels[clusterv1.ClusterNameLabel]}}}
				})))
	}
	if err := eb.Complete(eng); err != nil {
		return fmt.Errorf("engagement controller: %w", err)
	}
	return mgr.Add(stopOnExit{cfg.Engager})
}

// stopOnExit disengages every cluster when the manager stops.
type stopOnExit struct{ e *Engager }

func (s stopOnExit) Start(ctx context.Context) error {
	<-ctx.Done()
	s.e.Stop()
	return nil
}

func hasLabel(key string) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := o.GetLabels()[key]
		return ok
	})
}

// allSources maps a profile change to every cluster source, since selection is global.
func allSources(c client.Client, clusterAPI bool) handler.MapFunc {
	return func(ctx context.Context, _ client.Object) []reconcile.Request {
		var reqs []reconcile.Request
		if clusterAPI {
			cl := &clusterv1.ClusterList{}
			if err := c.List(ctx, cl); err == nil {
				for _, x := range cl.Items {
					reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: x.Namespace, Name: x.Name}})
				}
			}
		}
		sl := &corev1.SecretList{}
		if err := c.List(ctx, sl, client.HasLabels{v1alpha1.KubeconfigSecretLabel}); err == nil {
			for _, x := range sl.Items {
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: x.Namespace, Name: x.Name}})
			}
		}
		return reqs
	}
}

// HasClusterAPI reports whether the seed serves Cluster API's v1beta2 Clusters.
func HasClusterAPI(mgr ctrl.Manager) bool {
	_, err := mgr.GetRESTMapper().RESTMapping(clusterv1.GroupVersion.WithKind("Cluster").GroupKind(), clusterv1.GroupVersion.Version)
	return err == nil
}

// concurrency is how many clusters are reconciled at once.
const concurrency = 8
