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
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controller/kit"
	"github.com/shardgate/shardgate/pkg/predicates"
)

// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses,verbs=get;list;watch
// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses/status,verbs=get;update;patch

// Config wires the claims controller.
type Config struct {
	Kit    kit.Config
	Access clusteraccess.Access
	// Board takes the controller's part of the status.
	Board       *cistatus.Board
	Concurrency int
	// ReclaimGrace is how long a claim's Ingresses must stay gone before its reclaim policy
	// applies.
	ReclaimGrace time.Duration
}

// Add registers the claims controller.
func Add(mgr ctrl.Manager, cfg Config) error {
	r := &Reconciler{Client: mgr.GetClient(), Access: cfg.Access, Recorder: mgr.GetEventRecorder("shardgate-claims"),
		ReclaimGrace: cfg.ReclaimGrace, Clock: clock.RealClock{}, Board: cfg.Board}
	return kit.New(mgr, "claims", cfg.Kit).Concurrency(cfg.Concurrency).
		For(&v1alpha1.ClusterIngress{}, builder.WithPredicates(predicate.Or(predicates.MetadataOrSpecChanged, predicates.DomainChanged))).
		// Claims and Ingresses (what they bind), router Deployments (claimed shards' readiness).
		WatchesRawSource(source.Channel(
			cfg.Access.Subscribe(clusteraccess.ChangeClaims|clusteraccess.ChangeRoutes|clusteraccess.ChangeManaged),
			&handler.EnqueueRequestForObject{})).
		Complete(r)
}
