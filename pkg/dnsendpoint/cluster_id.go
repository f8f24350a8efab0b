package dnsendpoint

import (
	"cmp"
	"context"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/dnsname"
)

// Field indexes on ClusterIngresses: the domain a cluster asks for (spec.clusterID in its zone)
// and the domain it holds (status.domain). Cluster IDs are unique per zone, so a domain is the
// unit of ownership.
const (
	requestedDomainIndex = "dns.requestedDomain"
	heldDomainIndex      = "dns.heldDomain"
)

// requestedDomain is <spec.clusterID>.<zone> as asked for ("" when the zone is unusable).
func requestedDomain(ci *v1alpha1.ClusterIngress) string {
	zone, err := dnsname.NormalizeZone(ci.Spec.DNS.Zone)
	if err != nil || ci.Spec.ClusterID == "" {
		return ""
	}
	return ci.Spec.ClusterID + "." + zone
}

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

// domainHolder returns who has domain among the ClusterIngresses that ask for it or hold it. A
// holder being deleted still holds until it is gone: two DNSEndpoints never publish one name.
func (r *Reconciler) domainHolder(ctx context.Context, ci *v1alpha1.ClusterIngress, domain string) (types.NamespacedName, error) {
	seen := map[types.NamespacedName]bool{}
	claims := []Claim{{Key: client.ObjectKeyFromObject(ci), Held: ci.Status.Domain == domain, Created: ci.CreationTimestamp}}
	seen[claims[0].Key] = true
	for _, index := range []string{requestedDomainIndex, heldDomainIndex} {
		list := &v1alpha1.ClusterIngressList{}
		if err := r.Client.List(ctx, list, client.MatchingFields{index: domain}); err != nil {
			return types.NamespacedName{}, err
		}
		for i := range list.Items {
			c := &list.Items[i]
			k := client.ObjectKeyFromObject(c)
			if seen[k] {
				continue
			}
			seen[k] = true
			claims = append(claims, Claim{Key: k, Held: c.Status.Domain == domain, Created: c.CreationTimestamp})
		}
	}
	return Holder(claims), nil
}
