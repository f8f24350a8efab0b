package clusterid

import (
	"cmp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Standing is how a ClusterIngress stands toward a domain, strongest first.
type Standing int

const (
	// None: no claim to the domain.
	None Standing = iota
	// Requests: the domain is <spec.clusterID>.<zone>.
	Requests
	// Publishes: its records are still at or under the domain by its status (PublishedDomains),
	// whatever status.domain says now: it held the domain and its records are still out there (a
	// cluster that moved to another ID and cannot be reached to rewrite them).
	Publishes
	// Holds: the domain is its status.domain.
	Holds
)

// Claim is one ClusterIngress' standing toward a domain.
type Claim struct {
	Key types.NamespacedName
	// Created is the ClusterIngress' creation time.
	Created metav1.Time
	// Held: the domain is its status.domain. Published: its records are at or
	// under the domain by its status. Requested: it asks for the domain.
	Held, Published, Requested bool
	// ShardDomains are the shard domains its records are at (PublishedShardDomains): a loser
	// yields only names the holder publishes too.
	ShardDomains []string
	// Asks is the domain it asks for ("" when none is usable); read only to explain a conflict (a
	// swap of IDs).
	Asks string
}

// Standing is the claim's strongest standing.
func (c Claim) Standing() Standing {
	switch {
	case c.Held:
		return Holds
	case c.Published:
		return Publishes
	case c.Requested:
		return Requests
	}
	return None
}

// Holder decides who has a domain among the claims to it:
//
//  1. whoever holds it in status keeps it, whatever its age: a newcomer (a renamed annotation, a
//     new Cluster with an old name) can never take another cluster's names, and a ClusterIngress
//     being deleted holds until it is gone (its records go first);
//  2. otherwise a cluster whose records are still at or under it (its status says) blocks it:
//     those records stay until that cluster can be reached, and nobody else may publish them
//     meanwhile (an unreachable cluster that moved to another ID keeps its old one blocked);
//  3. otherwise the oldest that asks for it.
//
// Within a standing the oldest wins, ties by namespace/name: two status holders must never
// happen, but if they do, every reconcile of every claimant decides the same. ok is false when no
// claim stands (nobody has the domain).
func Holder(claims []Claim) (holder Claim, ok bool) {
	for _, c := range claims {
		if c.Standing() == None {
			continue
		}
		if !ok || stronger(c, holder) {
			holder, ok = c, true
		}
	}
	return holder, ok
}

// stronger: a beats b (a stronger standing, else older, else first by namespace/name).
func stronger(a, b Claim) bool {
	return cmp.Or(
		cmp.Compare(b.Standing(), a.Standing()),
		a.Created.Compare(b.Created.Time),
		cmp.Compare(a.Key.String(), b.Key.String()),
	) < 0
}
