package dns

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/dnsname"
	"github.com/shardgate/shardgate/pkg/dnsrecords"
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

// domainHolder returns who has domain among the ClusterIngresses that ask for it or hold it. A
// holder being deleted still holds until it is gone: two DNSEndpoints never publish one name.
func (r *Reconciler) domainHolder(ctx context.Context, ci *v1alpha1.ClusterIngress, domain string) (types.NamespacedName, error) {
	seen := map[types.NamespacedName]bool{}
	claims := []dnsrecords.Claim{{Key: client.ObjectKeyFromObject(ci), Held: ci.Status.Domain == domain, Created: ci.CreationTimestamp}}
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
			claims = append(claims, dnsrecords.Claim{Key: k, Held: c.Status.Domain == domain, Created: c.CreationTimestamp})
		}
	}
	return dnsrecords.Holder(claims), nil
}
