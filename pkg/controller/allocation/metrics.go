package allocation

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// routesGauge is what the dashboard's allocation panel plots: per cluster, the Ingresses
// allocated to a shard and those refused (each refused one says why on itself).
var routesGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "shardgate_cluster_routes",
	Help: "Ingresses of a user cluster by allocation outcome (state = allocated or rejected; cluster = ClusterIngress namespace/name).",
}, []string{"cluster", "state"})

func init() { metrics.Registry.MustRegister(routesGauge) }

func recordRoutes(cluster string, allocated, rejected int32) {
	routesGauge.WithLabelValues(cluster, "allocated").Set(float64(allocated))
	routesGauge.WithLabelValues(cluster, "rejected").Set(float64(rejected))
}

func forgetRoutes(cluster string) {
	routesGauge.DeleteLabelValues(cluster, "allocated")
	routesGauge.DeleteLabelValues(cluster, "rejected")
}

// ForgetCluster drops the cluster's samples: this replica gave the cluster to another, whose
// samples are the live ones (a stale sample here would fire, or hide, an alert).
func ForgetCluster(key types.NamespacedName) { forgetRoutes(key.String()) }
