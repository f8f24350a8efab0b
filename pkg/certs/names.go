// Package certs decides everything about a cluster's certificate without doing it: the names it
// covers, the cert-manager Certificate that asks for it, when a new ACME order may be placed, whether
// an issued key pair may be served, and what CertificateReady says. The certificates controller
// gathers and applies; the shard controller hands the key pair to the routers.
package certs

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
)

// maxNameLength keeps the Certificate's (and its Secret's) name a valid label value as well,
// where cert-manager and tools put it in labels.
const maxNameLength = 63

// MaxNames is the most names one certificate asks for: ACME servers (Let's Encrypt) refuse an
// order for more than 100.
const MaxNames = 100

// CertificateName is the name of the cert-manager Certificate, and of the Secret it fills, in
// Shardgate's certificate namespace for the ClusterIngress ci: "<namespace>.<name>-tls". A
// namespace has no dots, so two clusters never share a name; a name past 63 characters is cut
// and ends in a hash of both.
func CertificateName(ci types.NamespacedName) string {
	n := ci.Namespace + "." + ci.Name + "-tls"
	if len(n) <= maxNameLength {
		return n
	}
	h := hash(ci.Namespace + "/" + ci.Name)[:10]
	prefix := strings.TrimRight((ci.Namespace + "." + ci.Name)[:maxNameLength-len("-tls")-len(h)-1], ".-")
	return prefix + "-" + h + "-tls"
}

// LegacyCertificateName is where Certificates lived before they moved to Shardgate's namespace:
// "<name>-tls" in the ClusterIngress' own namespace. Only the move reads it.
func LegacyCertificateName(ci string) string {
	n := ci + "-tls"
	if len(n) <= maxNameLength {
		return n
	}
	h := hash(ci)[:8]
	return ci[:maxNameLength-len("-tls")-len(h)-1] + "-" + h + "-tls"
}

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// DNSNames are the names the cluster owns, all of which its certificate would cover: its domain
// and wildcard, and each shard's wildcard. A shard's apex is one label under the cluster domain,
// so the cluster wildcard already covers it (ACME servers refuse names a wildcard of the same
// order covers). One certificate per cluster, not per shard: ACME rate limits count
// certificates per registered domain per week.
func DNSNames(domain string, shards []v1alpha1.ShardSpec) []string {
	out, _ := Names(domain, shards)
	return out
}

// Names are the names the cluster's certificate asks for: its domain and wildcard, then each
// shard's wildcard in the order shards lists them (the profile's shards, then claimed shards in
// status order), at most MaxNames, sorted. Shards whose names do not fit are left out, named in
// leftOut: a certificate past the limit would never be issued, for every tenant of the cluster.
func Names(domain string, shards []v1alpha1.ShardSpec) (dnsNames, leftOut []string) {
	out := []string{domain, "*." + domain}
	for _, s := range shards {
		d := names.ShardDomain(s.Name, domain)
		if d == domain || slices.Contains(out, "*."+d) {
			continue
		}
		if len(out) == MaxNames {
			leftOut = append(leftOut, s.Name)
			continue
		}
		out = append(out, "*."+d)
	}
	slices.Sort(out)
	return slices.Compact(out), leftOut
}

// NamesKey identifies a set of names (sorted): the ledger of ACME orders records it, and the
// Certificate carries the names it was granted.
func NamesKey(dnsNames []string) string {
	return hash(strings.Join(dnsNames, ","))[:16]
}
