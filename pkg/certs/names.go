// Package certs decides everything about a cluster's certificate without doing it: the names it
// covers, the cert-manager Certificate that asks for it, whether an issued key pair may be
// served, and what CertificateReady says. The certificates controller gathers and applies; the
// shard controller hands the key pair to the routers.
package certs

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
)

// maxNameLength keeps the Certificate's (and its Secret's) name a valid label value as well,
// where cert-manager and tools put it in labels.
const maxNameLength = 63

// CertificateName is the name of the cert-manager Certificate, and of the Secret it fills, for
// the ClusterIngress named ci.
func CertificateName(ci string) string {
	n := ci + "-tls"
	if len(n) <= maxNameLength {
		return n
	}
	sum := sha256.Sum256([]byte(ci))
	h := hex.EncodeToString(sum[:])[:8]
	return ci[:maxNameLength-len("-tls")-len(h)-1] + "-" + h + "-tls"
}

// DNSNames are the names one certificate covers for a cluster: its domain and wildcard, and
// each shard's wildcard. A shard's apex is one label under the cluster domain, so the cluster
// wildcard already covers it (ACME servers refuse names a wildcard of the same order covers).
// One certificate per cluster, not per shard: ACME rate limits count certificates per
// registered domain per week.
func DNSNames(domain string, shards []v1alpha1.ShardSpec) []string {
	out := []string{domain, "*." + domain}
	for _, s := range shards {
		if d := names.ShardDomain(s.Name, domain); d != domain {
			out = append(out, "*."+d)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
