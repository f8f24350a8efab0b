package canary

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	checks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shardgate_canary_checks_total",
		Help: "Canary checks of shards, by result (Serving, NotResolving, NotAnswering).",
	}, []string{"result"})
	serving = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "shardgate_shard_routes_serving",
		Help: "1 while a shard's canary route answers through its routers from the seed, else 0 (cluster = ClusterIngress namespace/name).",
	}, []string{"cluster", "shard"})
)

func init() { metrics.Registry.MustRegister(checks, serving) }

// ForgetCluster drops the cluster's samples: this replica gave the cluster to another, whose
// samples are the live ones (a stale sample here would fire, or hide, an alert).
func ForgetCluster(key types.NamespacedName) {
	serving.DeletePartialMatch(prometheus.Labels{"cluster": key.String()})
}
