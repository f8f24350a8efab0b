package dnsrecords

import (
	"hash/fnv"
	"strconv"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// Share is the seed external-dns instance, of shares, that publishes the DNSEndpoint
// namespace/name: one external-dns writes its records one DNSEndpoint status at a time, which at
// a thousand clusters is what users wait for (docs/operator-guide.md, Sizing), so the chart can
// run several, each reading the DNSEndpoints of its share.
//
// Rendezvous hashing: each endpoint goes to the share whose hash with it is highest, so going from
// N to N+1 shares moves only the endpoints the new share wins (about 1/(N+1)), not most of them as
// "hash mod N" would. shares below 2 is one share, "0".
func Share(namespace, name string, shares int) string {
	best, bestScore := 0, uint64(0)
	for k := range max(shares, 1) {
		h := fnv.New64a()
		_, _ = h.Write([]byte(namespace + "/" + name + "/" + strconv.Itoa(k)))
		if s := mix(h.Sum64()); k == 0 || s > bestScore {
			best, bestScore = k, s
		}
	}
	return strconv.Itoa(best)
}

// EndpointLabels are the labels of Shardgate's DNSEndpoint namespace/name: the mark the chart's
// external-dns filters on, and its share.
func EndpointLabels(namespace, name string, shares int) map[string]string {
	return map[string]string{
		v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue,
		v1alpha1.DNSShareLabel:  Share(namespace, name, shares),
	}
}

// mix is splitmix64's finalizer: FNV's hashes of keys that differ only in their last bytes (the
// share number) are too alike to rank shares evenly.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
