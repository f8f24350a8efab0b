package clusterid

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// Input is what Decide decides a ClusterIngress' identity from.
type Input struct {
	Self types.NamespacedName
	// ClusterID is spec.clusterID; Asked the domain RequestedDomain gives for the spec, or
	// Refused why there is none.
	ClusterID, Asked string
	Refused          *Refusal
	// HeldID and HeldDomain are status.clusterID and status.domain now.
	HeldID, HeldDomain string
	// AskedClaims are the claims to Asked, HeldClaims those to HeldDomain when it is another
	// domain; Self's claim is in both.
	AskedClaims, HeldClaims []Claim
}

// Decision is the identity's part of the status.
type Decision struct {
	ClusterID, Domain string
	// Assigned is DomainAssigned: True when Domain is the domain asked for.
	Assigned metav1.Condition
}

// Decide gives a ClusterIngress the domain it asks for once it is valid and the cluster is its
// holder (Holder), whether or not the user cluster can be observed; the DNS controller publishes
// records only for a held domain. A cluster that cannot have the domain it asks for keeps the one
// it holds, records and all (an ID changed to one that is taken or invalid loses nothing), unless
// another cluster holds that one too: then the holder Holder names keeps it and this cluster's
// status lets it go, so two clusters never both hold one domain.
func Decide(in Input) Decision {
	d := Decision{ClusterID: in.HeldID, Domain: in.HeldDomain}
	if in.HeldDomain != "" && in.HeldDomain != in.Asked {
		if h, ok := Holder(in.HeldClaims); ok && h.Key != in.Self {
			d.ClusterID, d.Domain = "", ""
		}
	}
	if in.Refused != nil {
		d.Assigned = assigned(metav1.ConditionFalse, in.Refused.Reason, in.Refused.Message)
		return withYield(d, in)
	}
	h, ok := Holder(in.AskedClaims)
	if !ok || h.Key == in.Self {
		d.ClusterID, d.Domain = in.ClusterID, in.Asked
		d.Assigned = assigned(metav1.ConditionTrue, v1alpha1.ReasonDomainHeld,
			fmt.Sprintf("the cluster holds %s (cluster ID %q)", in.Asked, in.ClusterID))
		return d
	}
	if in.HeldDomain == in.Asked {
		d.ClusterID, d.Domain = "", "" // held by another status holder too: the older keeps it
	}
	d.Assigned = assigned(metav1.ConditionFalse, v1alpha1.ReasonClusterIDConflict, conflict(in, h))
	return withYield(d, in)
}

// withYield turns d into DomainYielded when the cluster holds nothing and yieldsTo says its
// records are copies of another holder's, whatever else it was refused for (said after).
func withYield(d Decision, in Input) Decision {
	if d.Domain != "" {
		return d
	}
	if y, ok := yieldsTo(in); ok {
		d.Assigned = assigned(metav1.ConditionFalse, v1alpha1.ReasonDomainYielded, fmt.Sprintf(
			"%s is held by the cluster %s, which publishes its names; this cluster published them too "+
				"and its records are removed (%s: %s)",
			y.domain, y.holder.Key, d.Assigned.Reason, d.Assigned.Message))
	}
	return d
}

// copies: every name the loser's records are at, the holder's are at too (a loser with a shard
// of its own keeps all its records: its names would go unanswered).
func copies(loser, holder []string) bool {
	for _, d := range loser {
		if !slices.Contains(holder, d) {
			return false
		}
	}
	return len(loser) > 0
}

type yield struct {
	domain string
	holder Claim
}

// yieldsTo: a cluster that holds no domain but whose records are still under one that another
// cluster holds in status and publishes too (two holders once; the other won) removes its
// records: both publishing one name makes external-dns answer either's targets. Records whose
// domain nobody else publishes are kept (an unreachable holder's names are never left without
// an answer because of a contest).
func yieldsTo(in Input) (yield, bool) {
	for _, c := range []struct {
		domain string
		claims []Claim
	}{{in.Asked, in.AskedClaims}, {in.HeldDomain, in.HeldClaims}} {
		h, ok := Holder(c.claims)
		if !ok || h.Key == in.Self || !h.Held || !h.Published {
			continue
		}
		for _, self := range c.claims {
			if self.Key == in.Self && self.Published && copies(self.ShardDomains, h.ShardDomains) {
				return yield{domain: c.domain, holder: h}, true
			}
		}
	}
	return yield{}, false
}

// conflict says who has the domain asked for, and what to do.
func conflict(in Input, h Claim) string {
	switch {
	case h.Standing() == Holds && in.HeldDomain != "" && in.HeldDomain != in.Asked && h.Asks == in.HeldDomain:
		// Each waits for the other to let go, which neither does: only a third ID breaks it.
		return fmt.Sprintf("cluster ID %q (%s) is held by the cluster %s, which asks for this cluster's domain %s: "+
			"two clusters cannot swap IDs; move one of them through a third, unused ID first (annotation %s), "+
			"then give it the ID the other gave up",
			in.ClusterID, in.Asked, h.Key, in.HeldDomain, v1alpha1.ClusterIDAnnotation)
	case h.Standing() == Publishes:
		return fmt.Sprintf("cluster ID %q (%s) is blocked: the DNSEndpoint of the cluster %s still publishes names "+
			"under it (they stay until Shardgate can reach that cluster and rewrite them); set annotation %s to a unique ID",
			in.ClusterID, in.Asked, h.Key, v1alpha1.ClusterIDAnnotation)
	}
	return fmt.Sprintf("cluster ID %q (%s) is held by the cluster %s; set annotation %s to a unique ID",
		in.ClusterID, in.Asked, h.Key, v1alpha1.ClusterIDAnnotation)
}

func assigned(s metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: v1alpha1.ConditionDomainAssigned, Status: s, Reason: reason, Message: msg}
}
