// Package clustermetrics exports what each ClusterIngress' status says, read from the
// controller's cache at every scrape: the one view of a cluster's conditions that the chart's
// alerting rules and dashboards read. Read at the scrape rather than set by each controller, a
// series never outlives its cluster or its condition, whichever replica owns the cluster.
package clustermetrics

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

var (
	conditionDesc = prometheus.NewDesc("shardgate_cluster_condition",
		"1 for each condition of a user cluster's ClusterIngress, with its status and reason (cluster = namespace/name).",
		[]string{"cluster", "condition", "status", "reason"}, nil)
	clustersDesc = prometheus.NewDesc("shardgate_clusters",
		"ClusterIngresses in the seed: the user clusters Shardgate works for.", nil, nil)
	ownedDesc = prometheus.NewDesc("shardgate_sharding_owned_clusters",
		"ClusterIngresses whose fence this replica holds (with --sharding): summed over the replicas, "+
			"shardgate_clusters when every cluster has one owner.", nil, nil)
)

// readTimeout bounds a scrape's wait for the cache: before its first sync, a list waits for it.
const readTimeout = 5 * time.Second

// Collector is a prometheus.Collector over the ClusterIngresses a reader (the manager's cache)
// holds.
type Collector struct {
	Reader client.Reader
	Log    logr.Logger
	// Owns, with several replicas (--sharding), says whether this replica holds a cluster's
	// fence. Counted over the ClusterIngresses, not over the fences: sources no profile selects
	// and deleted clusters have fences too, and would hide a cluster nobody owns.
	Owns func(types.NamespacedName) bool
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- conditionDesc
	ch <- clustersDesc
	ch <- ownedDesc
}

// Collect implements prometheus.Collector. A cache that cannot be read yields no sample, rather
// than failing the whole scrape: every other metric stays readable, and a missing
// shardgate_clusters is what tells.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	list := &v1alpha1.ClusterIngressList{}
	// Read-only: no copy of every ClusterIngress at each scrape.
	if err := c.Reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		c.Log.Error(err, "listing ClusterIngresses for /metrics")
		return
	}
	ch <- prometheus.MustNewConstMetric(clustersDesc, prometheus.GaugeValue, float64(len(list.Items)))
	if c.Owns != nil {
		owned := 0
		for i := range list.Items {
			if c.Owns(client.ObjectKeyFromObject(&list.Items[i])) {
				owned++
			}
		}
		ch <- prometheus.MustNewConstMetric(ownedDesc, prometheus.GaugeValue, float64(owned))
	}
	for _, s := range Conditions(list.Items) {
		ch <- prometheus.MustNewConstMetric(conditionDesc, prometheus.GaugeValue, 1,
			s.Cluster, s.Condition, s.Status, s.Reason)
	}
}

// Condition is one shardgate_cluster_condition sample.
type Condition struct{ Cluster, Condition, Status, Reason string }

// Conditions lists the samples of the clusters' conditions. Two conditions of one type on one
// object (a hand edit; the API server allows it) would be one series twice, which fails the
// whole scrape: the first is kept, as meta.FindStatusCondition reads it.
func Conditions(cis []v1alpha1.ClusterIngress) []Condition {
	var out []Condition
	for i := range cis {
		cluster := cis[i].Namespace + "/" + cis[i].Name
		seen := map[string]bool{}
		for _, c := range cis[i].Status.Conditions {
			if seen[c.Type] {
				continue
			}
			seen[c.Type] = true
			out = append(out, Condition{Cluster: cluster, Condition: c.Type, Status: status(c.Status), Reason: c.Reason})
		}
	}
	return out
}

// status is True, False or Unknown; anything else an edit put there reads as Unknown.
func status(s metav1.ConditionStatus) string {
	switch s {
	case metav1.ConditionTrue, metav1.ConditionFalse:
		return string(s)
	default:
		return string(metav1.ConditionUnknown)
	}
}
