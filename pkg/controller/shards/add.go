// Package shards is the shard controller: it deploys every shard's routers into a user cluster
// (rendered by pkg/render), repairs drift, prunes removed shards, reports ShardsAvailable and
// RoutesProtected, and removes everything it created when the cluster is let go.
package shards

import (
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

// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// Config wires the shard controller.
type Config struct {
	Kit    kit.Config
	Access clusteraccess.Access
	// Board takes the controller's part of the status.
	Board       *cistatus.Board
	Concurrency int
	// Canary: the canary controller checks shards' canary routes, so they are rendered (unless a
	// profile turns them off).
	Canary bool
	// CertificateNamespace is where the issued certificates are.
	CertificateNamespace string
}

// clusterIngressChanges are the ClusterIngress updates the shard controller renders again for: spec,
// deletion and the domain; a renewed certificate (status.certificate), which is handed to the
// routers; VIPs, claims and load it renders from; an admitted flavour change (the routers roll).
// The other controllers' status writes do not matter.
var clusterIngressChanges = predicate.Or(predicates.MetadataOrSpecChanged, predicates.DomainChanged,
	predicates.CertificateChanged, predicates.VIPsChanged, predicates.ClaimsChanged, predicates.LoadChanged,
	predicates.RunningFlavoursChanged)

// Add registers the shard controller.
func Add(mgr ctrl.Manager, cfg Config) error {
	r := &Reconciler{Client: mgr.GetClient(), Access: cfg.Access, SecretReader: mgr.GetAPIReader(),
		CertificateNamespace: cfg.CertificateNamespace, Clock: clock.RealClock{}, Canary: cfg.Canary, Board: cfg.Board}
	return kit.New(mgr, "shards", cfg.Kit).Concurrency(cfg.Concurrency).
		For(&v1alpha1.ClusterIngress{}, builder.WithPredicates(clusterIngressChanges)).
		// Drift of managed objects, nodes' labels (which shards' nodeSelectors match) and tenants'
		// ListenerSets with the routes holding their hosts; not readiness, which the routers'
		// pods report.
		WatchesRawSource(source.Channel(cfg.Access.Subscribe(clusteraccess.ChangeManaged|clusteraccess.ChangeNodeLabels|
			clusteraccess.ChangeListeners),
			&handler.EnqueueRequestForObject{})).
		Complete(r)
}
