package routedips

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	moves = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shardgate_routed_ip_moves_total",
		Help: "Routed IPs assigned to a new node (updateRoutedIP Jobs that succeeded), by class.",
	}, []string{"class"})
	moveDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "shardgate_routed_ip_move_duration_seconds",
		Help:    "Time from a move's start (a new node elected) to its updateRoutedIP Job succeeding, by class.",
		Buckets: []float64{1, 2, 5, 10, 20, 30, 60, 120, 300, 600},
	}, []string{"class"})
	moveFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shardgate_routed_ip_move_failures_total",
		Help: "updateRoutedIP Jobs that failed (each is retried after a backoff), by class.",
	}, []string{"class"})
	firewallFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shardgate_routed_ip_firewall_failures_total",
		Help: "updateFirewall Jobs that failed, by class.",
	}, []string{"class"})
)

func init() {
	metrics.Registry.MustRegister(moves, moveDuration, moveFailures, firewallFailures)
}
