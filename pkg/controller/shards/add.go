// Package shards is the shard controller: it deploys every shard's routers into a user cluster
// (rendered by pkg/render), repairs drift, prunes removed shards, reports ShardsAvailable and
// RoutesProtected, and removes everything it created when the cluster is let go.
package shards

import (
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/conflicts"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/predicates"
	"github.com/shardgate/shardgate/pkg/replicas/gate"
)

// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// Add registers the shard controller; canary: the controller checks shards' canary routes, so
// they are rendered (unless a profile turns them off).
// board takes the conditions it reports; certNamespace is where the issued certificates are.
func Add(mgr ctrl.Manager, access clusteraccess.Access, board *cistatus.Board, concurrency int, canary bool, certNamespace string) error {
	return ctrl.NewControllerManagedBy(mgr).Named("shards").
		// Clusters are independent: one slow cluster must not queue the others behind it.
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		// Spec, deletion and the domain matter; the other controllers' status writes do not.
		// A renewed certificate (status.certificate) is handed to the routers.
		For(&v1alpha1.ClusterIngress{}, builder.WithPredicates(predicate.Or(predicates.MetadataOrSpecChanged, predicates.DomainChanged, predicates.CertificateChanged, predicates.VIPsChanged, predicates.ClaimsChanged))).
		// Drift of managed objects, and nodes' labels (which shards' nodeSelectors match); not
		// readiness, which the routers' pods report.
		WatchesRawSource(source.Channel(access.Subscribe(clusteraccess.ChangeManaged|clusteraccess.ChangeNodeLabels), &handler.EnqueueRequestForObject{})).
		WatchesRawSource(gate.Changes()).
		Complete(gate.Only(conflicts.Retried("shards", &Reconciler{Client: mgr.GetClient(), Access: access, SecretReader: mgr.GetAPIReader(), CertificateNamespace: certNamespace, Clock: clock.RealClock{}, Canary: canary, Board: board})))
}
