package certificates

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/shardgate/shardgate/pkg/certs"
)

var expiry = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "shardgate_certificate_expiry_timestamp_seconds",
	Help: "When a user cluster's certificate expires, as Unix time (cluster = ClusterIngress namespace/name); absent before the first issuance.",
}, []string{"cluster"})

func init() { metrics.Registry.MustRegister(expiry) }

// record sets the cluster's expiry from its key pair (none yet: no sample).
func record(cluster types.NamespacedName, kp *certs.KeyPair) {
	if kp == nil {
		expiry.DeleteLabelValues(cluster.String())
		return
	}
	expiry.WithLabelValues(cluster.String()).Set(float64(kp.Leaf.NotAfter.Unix()))
}

// forget drops the cluster's sample (TLS off, or the cluster gone).
func forget(cluster types.NamespacedName) { expiry.DeleteLabelValues(cluster.String()) }

// ForgetCluster drops the cluster's samples: this replica gave the cluster to another, whose
// samples are the live ones (a stale sample here would fire, or hide, an alert).
func ForgetCluster(key types.NamespacedName) { forget(key) }
