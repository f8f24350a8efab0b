package clusteraccess

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var engagedClusters = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "shardgate_engaged_clusters",
	Help: "User clusters with a running cache in this controller.",
})

func init() { metrics.Registry.MustRegister(engagedClusters) }
