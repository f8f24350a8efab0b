// Package replicas decides which controller replica serves which user cluster: rendezvous
// (highest-random-weight) hashing over the live replicas, so a replica joining or leaving moves
// only its own share; and which replicas are live, from their Leases. Pure decisions: the Leases
// are read and written by pkg/replicas/gate.
//
// Naming: a replica is a copy of the controller, and replicas share a seed's clusters; a shard is
// a set of routers in a user cluster (pkg/render). Replicas are never called shards. Only names
// installations depend on keep the older word: the flags --sharding and
// --sharding-lease-duration and the shardgate_sharding_* metrics.
package replicas

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

// Observer tells live replicas from gone ones by when this replica saw their Leases change, on its
// own clock — client-go leader election's rule — not by the renewTime they wrote: a Lease is
// expired once it has not changed for its duration as observed here. So clocks need not agree,
// and after the seed's API server was away (nobody could renew) every replica gets a full
// duration to renew again before others count it gone, instead of all taking each other's
// clusters at the first list.
type Observer struct {
	seen map[string]observation // by Lease name
	last time.Time              // the last Observe
}

type observation struct {
	renewTime string    // the Lease's renewTime as written (its change is what counts)
	at        time.Time // when this replica first saw that renewTime
}

// Observe records leases, seen at now, and forgets Leases no longer listed. After a gap in the
// observations (more than half a Lease's duration without a list: the seed's API server was
// away, or this replica was stalled), a replica that was live when sight was lost is given a full
// duration from now: nobody could tell whether it renewed meanwhile. One already gone then stays
// gone.
func (o *Observer) Observe(leases []coordinationv1.Lease, now time.Time) {
	next := make(map[string]observation, len(leases))
	for i := range leases {
		l := &leases[i]
		if ob, ok := o.seen[l.Name]; ok && !o.last.IsZero() && l.Spec.LeaseDurationSeconds != nil {
			d := time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
			if now.Sub(o.last) > d/2 && o.last.Before(ob.at.Add(d)) {
				ob.at = now
				o.seen[l.Name] = ob
			}
		}
		next[l.Name] = o.observe(l, now)
	}
	o.seen, o.last = next, now
}

// observe records one Lease seen at now and returns its observation.
func (o *Observer) observe(l *coordinationv1.Lease, now time.Time) observation {
	if o.seen == nil {
		o.seen = map[string]observation{}
	}
	rt := ""
	if l.Spec.RenewTime != nil {
		rt = l.Spec.RenewTime.UTC().Format(time.RFC3339Nano)
	}
	ob, ok := o.seen[l.Name]
	if !ok || ob.renewTime != rt {
		ob = observation{renewTime: rt, at: now}
	}
	o.seen[l.Name] = ob
	return ob
}

// Live are the holders of leases that are not expired at now, sorted (Observe them first).
func (o *Observer) Live(leases []coordinationv1.Lease, now time.Time) []string {
	var out []string
	for i := range leases {
		if o.Alive(&leases[i], now) {
			out = append(out, *leases[i].Spec.HolderIdentity)
		}
	}
	sort.Strings(out)
	return out
}

// Alive records l, seen at now, and reports whether it names a holder that renewed it (as this
// replica observed) less than its duration ago.
func (o *Observer) Alive(l *coordinationv1.Lease, now time.Time) bool {
	s := l.Spec
	ob := o.observe(l, now)
	if s.HolderIdentity == nil || *s.HolderIdentity == "" || s.RenewTime == nil || s.LeaseDurationSeconds == nil {
		return false
	}
	return now.Before(ob.at.Add(time.Duration(*s.LeaseDurationSeconds) * time.Second))
}
