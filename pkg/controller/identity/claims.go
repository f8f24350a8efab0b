package identity

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusterid"
)

// gather is what clusterid.Decide needs for ci: the domain it asks for and every claim to it, and
// the claims to the domain it holds when that is another one.
func (r *Reconciler) gather(ctx context.Context, ci *v1alpha1.ClusterIngress) (clusterid.Input, error) {
	asked, refused := clusterid.RequestedDomain(ci.Spec, r.ServedZones)
	in := clusterid.Input{Self: client.ObjectKeyFromObject(ci), ClusterID: ci.Spec.ClusterID, Asked: asked,
		Refused: refused, HeldID: ci.Status.ClusterID, HeldDomain: ci.Status.Domain}
	var err error
	if asked != "" {
		if in.AskedClaims, err = r.claims(ctx, ci, asked); err != nil {
			return in, err
		}
	}
	if in.HeldDomain != "" && in.HeldDomain != asked {
		if in.HeldClaims, err = r.claims(ctx, ci, in.HeldDomain); err != nil {
			return in, err
		}
	}
	return in, nil
}

// claims are self's and every other claim to domain: the ClusterIngresses that hold it in status,
// ask for it, or whose records are still at or under it by their status. Each is read through
// the board: a holder this replica decided a moment ago counts before its status is written.
func (r *Reconciler) claims(ctx context.Context, self *v1alpha1.ClusterIngress, domain string) ([]clusterid.Claim,
	error) {
	cis := map[types.NamespacedName]*v1alpha1.ClusterIngress{client.ObjectKeyFromObject(self): self}
	for _, index := range []string{heldDomainIndex, requestedDomainIndex, publishedDomainIndex} {
		list := &v1alpha1.ClusterIngressList{}
		if err := r.Client.List(ctx, list, client.MatchingFields{index: domain}); err != nil {
			return nil, err
		}
		for i := range list.Items {
			c := &list.Items[i]
			if k := client.ObjectKeyFromObject(c); cis[k] == nil {
				r.Board.Overlay(c)
				cis[k] = c
			}
		}
	}
	out := make([]clusterid.Claim, 0, len(cis))
	for k, c := range cis {
		// A request the cluster cannot have (a zone not served, names too long) is no request:
		// it must not keep a valid newcomer out of a domain it could never publish.
		asks, _ := clusterid.RequestedDomain(c.Spec, r.ServedZones)
		out = append(out, clusterid.Claim{Key: k, Created: c.CreationTimestamp, Held: c.Status.Domain == domain,
			Published: slices.Contains(clusterid.PublishedDomains(c.Status), domain), Requested: asks == domain,
			Asks: asks, ShardDomains: clusterid.PublishedShardDomains(c.Status)})
	}
	return out, nil
}
