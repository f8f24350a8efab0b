package cistatus

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/controller/kit"
)

var (
	statusWrites = prometheus.NewCounter(prometheus.CounterOpts{Name: "shardgate_status_writes_total",
		Help: "ClusterIngress status writes (server-side applies of every controller's part)"})
	partChanges = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shardgate_status_part_changes_total",
		Help: "Posts that changed an owner's part of a ClusterIngress' status (what a write per controller would cost)"},
		[]string{"owner"})
	partsRefused = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shardgate_status_parts_refused_total",
		Help: "Controllers' status parts the API server refused (the others were written without them)"}, []string{"owner"})
	writeLag = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "shardgate_status_write_lag_seconds",
		Help:    "From a change of a ClusterIngress' status part to its write (held behind records at most 10 s)",
		Buckets: []float64{0.1, 0.25, 0.5, 1, 2, 5, 10, 15, 30, 60}})
	legacyAdopted = prometheus.NewCounter(prometheus.CounterOpts{Name: "shardgate_status_legacy_managers_adopted_total",
		Help: "ClusterIngresses whose status fields, written by an older Shardgate, were handed to the apply manager"})
)

func init() {
	metrics.Registry.MustRegister(statusWrites, partChanges, partsRefused, writeLag, legacyAdopted)
}

// Config wires the status writer.
type Config struct {
	Kit kit.Config
	// Board is the board every controller posts to, the one the writer writes.
	Board       *Board
	Concurrency int
}

// Add registers the status writer: one reconcile per ClusterIngress whose posted parts changed,
// gated like every controller (only the replica serving a cluster writes its status).
func Add(mgr ctrl.Manager, cfg Config) error {
	b := cfg.Board
	return kit.New(mgr, "status", cfg.Kit).Concurrency(cfg.Concurrency).
		WatchesRawSource(b.Source()).
		// A deleted ClusterIngress' parts are forgotten (Reconcile finds it gone).
		Watches(&v1alpha1.ClusterIngress{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(predicate.Funcs{
			CreateFunc: func(event.CreateEvent) bool { return false }, UpdateFunc: func(event.UpdateEvent) bool { return false },
			GenericFunc: func(event.GenericEvent) bool { return false }})).
		Complete(b)
}
