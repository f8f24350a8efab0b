package certificates

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/shardgate/shardgate/pkg/certs"
)

var (
	expiry = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "shardgate_certificate_expiry_timestamp_seconds",
		Help: "When a user cluster's certificate expires, as Unix time (cluster = ClusterIngress namespace/name); absent before the first issuance.",
	}, []string{"cluster"})
	// notBefore gives the alert the certificate's lifetime: cert-manager renews a third of the
	// way before expiry, so a 7-day certificate with 3 days left is on time and a 90-day one
	// with 14 days left is weeks late.
	notBefore = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "shardgate_certificate_not_before_timestamp_seconds",
		Help: "When a user cluster's certificate became valid, as Unix time (cluster = ClusterIngress namespace/name); absent before the first issuance.",
	}, []string{"cluster"})
)

func init() { metrics.Registry.MustRegister(expiry, notBefore) }

// record sets the cluster's validity from its key pair (none yet: no sample).
func record(cluster types.NamespacedName, kp *certs.KeyPair) {
	if kp == nil {
		forget(cluster)
		return
	}
	expiry.WithLabelValues(cluster.String()).Set(float64(kp.Leaf.NotAfter.Unix()))
	notBefore.WithLabelValues(cluster.String()).Set(float64(kp.Leaf.NotBefore.Unix()))
}

// forget drops the cluster's samples (TLS off, or the cluster gone).
func forget(cluster types.NamespacedName) {
	expiry.DeleteLabelValues(cluster.String())
	notBefore.DeleteLabelValues(cluster.String())
}

// ForgetCluster drops the cluster's samples: this replica gave the cluster to another, whose
// samples are the live ones (a stale sample here would fire, or hide, an alert).
func ForgetCluster(key types.NamespacedName) { forget(key) }
