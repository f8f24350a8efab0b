package dns

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	readyIngressNodes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "shardgate_cluster_ready_ingress_nodes",
		Help: "Ready ingress nodes of a user cluster as last observed (cluster = ClusterIngress namespace/name).",
	}, []string{"cluster"})
	dnsWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shardgate_dnsendpoint_writes_total",
		Help: "Writes of DNSEndpoints to the seed, by operation (create, update, delete).",
	}, []string{"operation"})
	verification = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "shardgate_dns_verification_seconds",
		Help:    "Time from a DNSEndpoint write the zone's authoritative servers did not answer yet (DNSPublished turning Propagating) to their answering exactly its targets (with --dns-verify-servers).",
		Buckets: []float64{0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300},
	})
	convergence = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "shardgate_dns_convergence_seconds",
		Help:    "Time from a user-cluster node change being observed to the DNSEndpoint being written.",
		Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
	})
)

func init() { metrics.Registry.MustRegister(readyIngressNodes, dnsWrites, convergence, verification) }

// ForgetCluster drops the cluster's samples: this replica gave the cluster to another, whose
// samples are the live ones (a stale sample here would fire, or hide, an alert).
func ForgetCluster(key types.NamespacedName) { readyIngressNodes.DeleteLabelValues(key.String()) }
