package clusterid

import (
	"slices"
	"strings"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// PublishedDomains are the domains a cluster's records are at or under, as the DNS controller
// recorded them in the cluster's status when it wrote them: each shard's domain that has targets
// (status.shards; a shard without targets has no records) and each of its parent names,
// lower-cased, without a trailing dot, sorted. A domain d is published by the cluster when it is
// among them: the field index over these makes "who still publishes names under d" one indexed
// List.
//
// Only the status counts, never a DNSEndpoint: status is a subresource the seed namespace's
// writer (S) cannot write, while the content of a DNSEndpoint in S's namespace is S's to forge
// (with a grant), and a forged one must neither take nor block another cluster's domain. The
// status is written in the pass that writes the records and kept while the cluster cannot be
// observed (the records are kept then too), and an older Shardgate writes it the same way.
func PublishedDomains(st v1alpha1.ClusterIngressStatus) []string {
	var out []string
	for _, name := range PublishedShardDomains(st) {
		for name != "" {
			out = append(out, name)
			_, parent, _ := strings.Cut(name, ".")
			name = parent
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// PublishedShardDomains are the shard domains with records by the status (targets), exactly,
// lower-cased, without a trailing dot, sorted: the names a cluster answers (*.<d> and <d>).
func PublishedShardDomains(st v1alpha1.ClusterIngressStatus) []string {
	var out []string
	for _, s := range st.Shards {
		if len(s.Targets) > 0 {
			out = append(out, strings.ToLower(strings.TrimSuffix(strings.TrimSpace(s.Domain), ".")))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
