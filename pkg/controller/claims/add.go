// Package claims is the IngressClaim controller: per user cluster it decides every IngressClaim
// (pkg/claims.Decide), records the outcome in status.claims (from which every other controller
// adds the claimed shards to the profile's: routers, DNS, certificate names, allocation pins),
// mirrors it into each claim's status and deletes the claims whose reclaim policy says so.
package claims

import (
	"time"

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

// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses,verbs=get;list;watch
// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses/status,verbs=get;update;patch

// Add registers the claims controller; reclaimGrace is how long a claim's Ingresses must stay
// gone before its reclaim policy applies.
func Add(mgr ctrl.Manager, access clusteraccess.Access, board *cistatus.Board, concurrency int, reclaimGrace time.Duration) error {
	r := &Reconciler{Client: mgr.GetClient(), Access: access, Recorder: mgr.GetEventRecorder("shardgate-claims"),
		ReclaimGrace: reclaimGrace, Clock: clock.RealClock{}, Board: board}
	return ctrl.NewControllerManagedBy(mgr).Named("claims").
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		For(&v1alpha1.ClusterIngress{}, builder.WithPredicates(predicate.Or(predicates.MetadataOrSpecChanged, predicates.DomainChanged))).
		// Claims and Ingresses (what they bind), router Deployments (claimed shards' readiness).
		WatchesRawSource(source.Channel(access.Subscribe(clusteraccess.ChangeClaims|clusteraccess.ChangeRoutes|clusteraccess.ChangeManaged), &handler.EnqueueRequestForObject{})).
		WatchesRawSource(gate.Changes()).
		Complete(gate.Only(conflicts.Retried("claims", r)))
}
