// Package sharding decides which controller replica serves which user cluster: rendezvous
// (highest-random-weight) hashing over the live replicas, so a replica joining or leaving moves
// only its own share; and which replicas are live, from their Leases.
package sharding

import (
	"hash/fnv"
	"sort"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
)

// Owner is the replica that serves key: the one whose hash with key is highest ("" with no
// replica). Every replica computes the same answer from the same live set.
func Owner(replicas []string, key string) string {
	best, bestWeight := "", uint64(0)
	for _, r := range replicas {
		h := fnv.New64a()
		_, _ = h.Write([]byte(r))
		_, _ = h.Write([]byte{0})
		_, _ = h.Write([]byte(key))
		w := mix(h.Sum64())
		if best == "" || w > bestWeight || (w == bestWeight && r < best) {
			best, bestWeight = r, w
		}
	}
	return best
}

// mix spreads FNV's output (a finaliser from SplitMix64): FNV alone weighs similar inputs alike.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Live are the holders of the replica Leases renewed within their duration at now, sorted.
func Live(leases []coordinationv1.Lease, now time.Time) []string {
	var out []string
	for _, l := range leases {
		if Valid(l, now) {
			out = append(out, *l.Spec.HolderIdentity)
		}
	}
	sort.Strings(out)
	return out
}

// Valid: the Lease names a holder and was renewed less than its duration before now.
func Valid(l coordinationv1.Lease, now time.Time) bool {
	s := l.Spec
	if s.HolderIdentity == nil || *s.HolderIdentity == "" || s.RenewTime == nil || s.LeaseDurationSeconds == nil {
		return false
	}
	return now.Before(s.RenewTime.Add(time.Duration(*s.LeaseDurationSeconds) * time.Second))
}
