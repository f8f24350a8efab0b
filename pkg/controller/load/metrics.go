package load

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

var (
	utilizationGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "shardgate_shard_utilization_percent",
		Help: "Requests per second per reporting router against the shard's capacity, in percent; absent while the load is unknown.",
	}, []string{"cluster", "shard"})
	saturatedGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "shardgate_shard_saturated",
		Help: "1 while the shard is Saturated (its utilization at or above its threshold, with hysteresis), else 0.",
	}, []string{"cluster", "shard"})
	clampedGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "shardgate_shard_load_reports_clamped",
		Help: "1 while a router of the shard reports figures out of bounds (clamped; see status.shardLoad), else 0.",
	}, []string{"cluster", "shard"})
)

func init() { metrics.Registry.MustRegister(utilizationGauge, saturatedGauge, clampedGauge) }

func recordShard(cluster string, l v1alpha1.ShardLoadStatus) {
	if l.State != v1alpha1.LoadUnknown {
		utilizationGauge.WithLabelValues(cluster, l.Shard).Set(float64(l.UtilizationPercent))
	}
	saturatedGauge.WithLabelValues(cluster, l.Shard).Set(oneIf(l.State == v1alpha1.LoadSaturated))
	clampedGauge.WithLabelValues(cluster, l.Shard).Set(oneIf(l.Clamped != ""))
}

func oneIf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func forgetCluster(cluster string) {
	for _, g := range []*prometheus.GaugeVec{utilizationGauge, saturatedGauge, clampedGauge} {
		g.DeletePartialMatch(prometheus.Labels{"cluster": cluster})
	}
}

// ForgetCluster drops the cluster's samples: this replica gave the cluster to another, whose
// samples are the live ones.
func ForgetCluster(key types.NamespacedName) { forgetCluster(key.String()) }
