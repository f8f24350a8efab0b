package gate

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The names predate the rule that replicas are not shards; they stay, since dashboards and
// alerts use them and docs/operator-guide.md names them.
var (
	liveReplicas = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "shardgate_sharding_live_replicas",
		Help: "Replicas whose Lease is fresh, as this replica sees them (with --sharding).",
	})
	heldClusters = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "shardgate_sharding_held_clusters",
		Help: "User clusters whose fence this replica holds: the clusters it works for (with --sharding).",
	})
	refusedWrites = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "shardgate_sharding_refused_writes_total",
		Help: "Writes refused because the reconcile making them had lost its fence (with --sharding).",
	})
)

func init() { metrics.Registry.MustRegister(liveReplicas, heldClusters, refusedWrites) }
