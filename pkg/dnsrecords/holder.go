package dnsrecords

import (
	"cmp"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Claim is one ClusterIngress asking for, or holding, a domain.
type Claim struct {
	Key types.NamespacedName
	// Held: the domain is the ClusterIngress' status.domain: it published it and holds it.
	Held bool
	// Created is the ClusterIngress' creation time (only for domains nobody holds yet).
	Created metav1.Time
}

// Holder decides who has a domain: whoever holds it keeps it, whatever the age of the objects
// involved, so a newcomer (a renamed annotation, a new Cluster with an old name) can never take
// another cluster's names. Only when nobody holds it does the oldest claimant get it (ties by
// namespace/name), which every reconcile of every claimant works out the same way.
func Holder(claims []Claim) types.NamespacedName {
	return slices.MinFunc(claims, func(a, b Claim) int {
		if a.Held != b.Held {
			if a.Held {
				return -1
			}
			return 1
		}
		return cmp.Or(a.Created.Compare(b.Created.Time), cmp.Compare(a.Key.String(), b.Key.String()))
	}).Key
}
