package allocation

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// routesGauge is what the dashboard's allocation panel plots: per cluster, the Ingresses
// allocated to a shard and those refused (each refused one says why on itself).
var routesGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "shardgate_cluster_routes",
	Help: "Ingresses of a user cluster by allocation outcome (state = allocated or rejected; cluster = ClusterIngress namespace/name).",
}, []string{"cluster", "state"})

// statusesLeft counts the statuses passes left to the next because a new route arrived
// (writePass.tell): statuses lag behind while routes keep arriving, and this says so.
var statusesLeft = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "shardgate_allocation_statuses_left_total",
	Help: "Route statuses an allocation pass left to the next pass because a route without a decision arrived.",
})

func init() { metrics.Registry.MustRegister(routesGauge, statusesLeft) }

// yielded records a pass that told told statuses and left left to the next.
func yielded(ctx context.Context, cluster string, told, left int) {
	statusesLeft.Add(float64(left))
	log.FromContext(ctx).V(1).Info("a route arrived: statuses left to the next pass", "cluster", cluster,
		"told", told, "left", left)
}

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
