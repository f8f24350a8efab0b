package canary

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/shardgate/shardgate/api/v1alpha1"
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
func ForgetCluster(key types.NamespacedName) { forgetServing(key.String()) }

// sampled remembers which shards of each cluster have a serving sample, so that a shard no
// longer checked (removed, or not requested this time) loses its sample: a stale 0 would page
// for a shard that is gone.
var sampled = struct {
	sync.Mutex
	shards map[string][]string
}{shards: map[string][]string{}}

// recordServing sets the serving samples of a cluster's shards to exactly these.
func recordServing(cluster string, values map[string]float64) {
	sampled.Lock()
	defer sampled.Unlock()
	for _, shard := range sampled.shards[cluster] {
		if _, ok := values[shard]; !ok {
			serving.DeleteLabelValues(cluster, shard)
		}
	}
	shards := make([]string, 0, len(values))
	for shard, v := range values {
		serving.WithLabelValues(cluster, shard).Set(v)
		shards = append(shards, shard)
	}
	sampled.shards[cluster] = shards
}

func forgetServing(cluster string) {
	sampled.Lock()
	defer sampled.Unlock()
	serving.DeletePartialMatch(prometheus.Labels{"cluster": cluster})
	delete(sampled.shards, cluster)
}

// requested: the results of a canary request. The others (no ready router, an address the
// canary refuses, no names yet) requested nothing, so they have no sample: ShardsAvailable and
// its alert say when a shard has no ready router.
func requested(reason string) bool {
	switch reason {
	case v1alpha1.ReasonServing, v1alpha1.ReasonNotResolving, v1alpha1.ReasonNotAnswering:
		return true
	}
	return false
}
