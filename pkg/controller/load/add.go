// Package load is the load controller: it reads the load its routers report (pkg/routerload) for
// every shard that reports load, records each shard's figures and state in status.shardLoad and
// says ShardsSaturated, the admin's cue to add routers or shards.
package load

import (
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
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Config wires the load controller.
type Config struct {
	Kit    kit.Config
	Access clusteraccess.Access
	// Board takes the controller's part of the status.
	Board       *cistatus.Board
	Concurrency int
}

// Add registers the load controller.
func Add(mgr ctrl.Manager, cfg Config) error {
	return kit.New(mgr, "load", cfg.Kit).Concurrency(cfg.Concurrency).
		For(&v1alpha1.ClusterIngress{}, builder.WithPredicates(predicate.Or(predicates.MetadataOrSpecChanged, predicates.RunningFlavoursChanged))).
		// The reports, and router Deployments (their ready routers).
		WatchesRawSource(source.Channel(cfg.Access.Subscribe(clusteraccess.ChangeRouterLoad|clusteraccess.ChangeManaged),
			&handler.EnqueueRequestForObject{})).
		Complete(&Reconciler{Client: mgr.GetClient(), Access: cfg.Access, Board: cfg.Board,
			Recorder: mgr.GetEventRecorder("shardgate-load")})
}
