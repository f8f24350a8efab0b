// Package routedips is the routed-IP controller. Per user cluster (Reconciler): it creates the
// RoutedIPs of RoutedIP shards, admits every RoutedIP of the cluster (pkg/routedip.Admit),
// elects a holder for each (Elect), advances each move through its class's updateRoutedIP Job
// (Advance), keeps the holder taints, records who holds what in status.routedIPs and mirrors it
// into each RoutedIP's status. Per class (FirewallReconciler): it runs updateFirewall Jobs until
// the cloud firewall is the map of every cluster's records (DesiredFirewall).
package routedips

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controller/kit"
	"github.com/shardgate/shardgate/pkg/predicates"
	"github.com/shardgate/shardgate/pkg/routedip"
)

// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses,verbs=get;list;watch
// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=shardgate.io,resources=clusterroutedipclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=shardgate.io,resources=clusterroutedipclasses/status,verbs=get;update;patch

// The Jobs run in --routed-ip-job-namespace only (the chart's: the release namespace, where it
// renders this Role; "shardgate" is a placeholder), and the cache watches them only there.
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete,namespace=shardgate

// Config of the routed-IP controllers.
type Config struct {
	Kit    kit.Config
	Access clusteraccess.Access
	// JobNamespace is where the classes' Jobs run (the controller's namespace: the classes'
	// Secrets live there).
	JobNamespace string
	// Board takes the controller's part of ClusterIngress status.
	Board *cistatus.Board
}

// clusterWorkers: clusters are placed in parallel (a worker per cluster key at a time, so one
// slow user cluster holds one worker, never the others' moves). Two clusters asking for one
// address at once cannot both get it: the address' Lease in the seed decides (addressclaims.go).
const clusterWorkers = 4

// Add registers both controllers. The firewall has one worker: a class's firewall is one map.
func Add(mgr ctrl.Manager, cfg Config) error {
	r := &Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Access: cfg.Access, JobNamespace: cfg.JobNamespace, Clock: clock.RealClock{}, Board: cfg.Board,
		Recorder: mgr.GetEventRecorder("shardgate-routedips")}
	jobs := builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == cfg.JobNamespace && o.GetLabels()[routedip.JobKindLabel] != ""
	}))
	if err := kit.New(mgr, "routedips", cfg.Kit).Concurrency(clusterWorkers).
		For(&v1alpha1.ClusterIngress{}, builder.WithPredicates(predicate.Or(predicates.MetadataOrSpecChanged, predicates.RunningFlavoursChanged))).
		// RoutedIPs, the endpoints of their Services, and nodes of the user cluster.
		WatchesRawSource(source.Channel(cfg.Access.Subscribe(clusteraccess.ChangeNodes|clusteraccess.ChangeRoutedIPs|clusteraccess.ChangeManaged), &handler.EnqueueRequestForObject{})).
		// An assign Job finishing; a class changing (its addresses, or its applied firewall).
		Watches(&batchv1.Job{}, handler.EnqueueRequestsFromMapFunc(r.clusterOfJob), jobs).
		Watches(&v1alpha1.ClusterRoutedIPClass{}, handler.EnqueueRequestsFromMapFunc(r.clustersOfClass)).
		Complete(r); err != nil {
		return err
	}
	f := &FirewallReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), JobNamespace: cfg.JobNamespace, Clock: clock.RealClock{},
		Recorder: mgr.GetEventRecorder("shardgate-routedips")}
	return kit.New(mgr, "routedip-firewall", cfg.Kit).Concurrency(1).
		For(&v1alpha1.ClusterRoutedIPClass{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// Records changing in any cluster change the map.
		Watches(&v1alpha1.ClusterIngress{}, handler.EnqueueRequestsFromMapFunc(f.allClasses)).
		Watches(&batchv1.Job{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetLabels()[routedip.JobClassLabel]}}}
		}), jobs).
		// With several replicas a class is fenced like a cluster: its new owner starts when owners
		// change.
		OwnerChanges(handler.EnqueueRequestsFromMapFunc(f.allClasses)).
		Complete(f)
}

// clusterOfJob maps an assign Job to its ClusterIngress (by the hash on its label).
func (r *Reconciler) clusterOfJob(ctx context.Context, o client.Object) []reconcile.Request {
	hash := o.GetLabels()[routedip.JobClusterLabel]
	if hash == "" {
		return nil
	}
	all := &v1alpha1.ClusterIngressList{}
	if err := r.Client.List(ctx, all); err != nil {
		return nil
	}
	for _, ci := range all.Items {
		if routedip.ClusterHash(ci.Namespace, ci.Name) == hash {
			return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(&ci)}}
		}
	}
	return nil
}

// clustersOfClass: every cluster that may use the class (any cluster with a record of it or
// RoutedIPs at all: a class appearing may admit a RoutedIP refused before).
func (r *Reconciler) clustersOfClass(ctx context.Context, _ client.Object) []reconcile.Request {
	all := &v1alpha1.ClusterIngressList{}
	if err := r.Client.List(ctx, all); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, ci := range all.Items {
		if c, ok := r.Access.Get(client.ObjectKeyFromObject(&ci)); len(ci.Status.RoutedIPs) > 0 || ok && c.Capabilities().CRDs {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&ci)})
		}
	}
	return out
}

// allClasses: a cluster's records changed (a holder given up drops out of its class's map, so
// the class it left matters as much as the one it joined); there are only a few classes.
func (f *FirewallReconciler) allClasses(ctx context.Context, _ client.Object) []reconcile.Request {
	all := &v1alpha1.ClusterRoutedIPClassList{}
	if err := f.Client.List(ctx, all); err != nil {
		// A cached list fails only while the cache is not synced; the classes' own sync and
		// their periodic passes pick the change up then.
		log.FromContext(ctx).Error(err, "list the routed-IP classes for a cluster's change")
		return nil
	}
	out := make([]reconcile.Request, 0, len(all.Items))
	for _, c := range all.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: c.Name}})
	}
	return out
}
