package clusterid

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

func key(name string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: name} }

// cl is name's claim (claim) asking for asks.
func cl(name string, created int, asks string, standings ...Standing) Claim {
	c := claim(name, created, standings...)
	c.Asks = asks
	return c
}

func withShards(c Claim, domains ...string) Claim {
	c.ShardDomains = domains
	return c
}

func TestDecide(t *testing.T) {
	self := key("self")
	for _, tt := range []struct {
		name string
		in   Input
		// Domain and ID after, DomainAssigned's reason, and words its message must have.
		domain, id, reason string
		says               []string
	}{
		{name: "a free domain is held at once, the cluster observed or not",
			in:     Input{ClusterID: "a", Asked: "a.z", AskedClaims: []Claim{cl("self", 5, "a.z", Requests)}},
			domain: "a.z", id: "a", reason: v1alpha1.ReasonDomainHeld},
		{name: "the holder keeps it",
			in: Input{ClusterID: "a", Asked: "a.z", HeldID: "a", HeldDomain: "a.z",
				AskedClaims: []Claim{cl("self", 5, "a.z", Holds, Requests), cl("older", 0, "a.z", Requests)}},
			domain: "a.z", id: "a", reason: v1alpha1.ReasonDomainHeld},
		{name: "an older newcomer never displaces the status holder",
			in: Input{ClusterID: "a", Asked: "a.z",
				AskedClaims: []Claim{cl("self", 0, "a.z", Requests), cl("holder", 5, "a.z", Holds, Requests)}},
			reason: v1alpha1.ReasonClusterIDConflict, says: []string{"held by the cluster ns/holder",
				v1alpha1.ClusterIDAnnotation}},
		{name: "the older of two requesters takes it",
			in: Input{ClusterID: "a", Asked: "a.z",
				AskedClaims: []Claim{cl("self", 5, "a.z", Requests), cl("older", 1, "a.z", Requests)}},
			reason: v1alpha1.ReasonClusterIDConflict, says: []string{"held by the cluster ns/older"}},
		{name: "another cluster's DNSEndpoint never displaces the status holder",
			in: Input{ClusterID: "a", Asked: "a.z", HeldID: "a", HeldDomain: "a.z",
				AskedClaims: []Claim{cl("self", 5, "a.z", Holds, Requests), cl("publisher", 0, "b.z", Publishes)}},
			domain: "a.z", id: "a", reason: v1alpha1.ReasonDomainHeld},
		{name: "a cluster whose records are still out there blocks the domain",
			in: Input{ClusterID: "a", Asked: "a.z",
				AskedClaims: []Claim{cl("self", 0, "a.z", Requests), cl("moved", 5, "b.z", Publishes)}},
			reason: v1alpha1.ReasonClusterIDConflict,
			says:   []string{"DNSEndpoint of the cluster ns/moved still publishes"}},
		{name: "an ID change moves status.domain to the new ID",
			in: Input{ClusterID: "b", Asked: "b.z", HeldID: "a", HeldDomain: "a.z",
				AskedClaims: []Claim{cl("self", 5, "b.z", Requests)},
				HeldClaims:  []Claim{cl("self", 5, "b.z", Holds, Publishes)}},
			domain: "b.z", id: "b", reason: v1alpha1.ReasonDomainHeld},
		{name: "back to an ID whose records it still publishes",
			in: Input{ClusterID: "a", Asked: "a.z", HeldID: "b", HeldDomain: "b.z",
				AskedClaims: []Claim{cl("self", 5, "a.z", Requests, Publishes), cl("older", 0, "a.z", Requests)},
				HeldClaims:  []Claim{cl("self", 5, "a.z", Holds)}},
			domain: "a.z", id: "a", reason: v1alpha1.ReasonDomainHeld},
		{name: "an ID changed to a taken one keeps the old domain",
			in: Input{ClusterID: "b", Asked: "b.z", HeldID: "a", HeldDomain: "a.z",
				AskedClaims: []Claim{cl("self", 0, "b.z", Requests), cl("other", 5, "b.z", Holds, Requests)},
				HeldClaims:  []Claim{cl("self", 0, "b.z", Holds)}},
			domain: "a.z", id: "a", reason: v1alpha1.ReasonClusterIDConflict,
			says: []string{"held by the cluster ns/other;"}},
		{name: "an ID changed to an invalid one keeps the old domain",
			in: Input{ClusterID: "B_", Refused: &Refusal{v1alpha1.ReasonInvalidClusterID, "not a label"},
				HeldID: "a", HeldDomain: "a.z",
				HeldClaims: []Claim{cl("self", 0, "", Holds)}},
			domain: "a.z", id: "a", reason: v1alpha1.ReasonInvalidClusterID, says: []string{"not a label"}},
		{name: "a refused domain with none held",
			in:     Input{ClusterID: "a", Refused: &Refusal{v1alpha1.ReasonZoneNotServed, "zone z"}},
			reason: v1alpha1.ReasonZoneNotServed, says: []string{"zone z"}},
		{name: "a swap of IDs conflicts and says to move through a third ID",
			in: Input{ClusterID: "b", Asked: "b.z", HeldID: "a", HeldDomain: "a.z",
				AskedClaims: []Claim{cl("self", 0, "b.z", Requests), cl("other", 5, "a.z", Holds)},
				HeldClaims:  []Claim{cl("self", 0, "b.z", Holds), cl("other", 5, "a.z", Requests)}},
			domain: "a.z", id: "a", reason: v1alpha1.ReasonClusterIDConflict,
			says: []string{"ns/other, which asks for this cluster's domain a.z", "cannot swap", "third"}},
		{name: "two status holders of the domain asked for (never happens): the younger lets it go",
			in: Input{ClusterID: "a", Asked: "a.z", HeldID: "a", HeldDomain: "a.z",
				AskedClaims: []Claim{cl("self", 5, "a.z", Holds, Requests), cl("older", 1, "a.z", Holds, Requests)}},
			reason: v1alpha1.ReasonClusterIDConflict, says: []string{"ns/older"}},
		{name: "two status holders of the old domain (never happens): the younger lets it go and takes the new",
			in: Input{ClusterID: "b", Asked: "b.z", HeldID: "a", HeldDomain: "a.z",
				AskedClaims: []Claim{cl("self", 5, "b.z", Requests)},
				HeldClaims:  []Claim{cl("self", 5, "b.z", Holds), cl("older", 1, "a.z", Holds)}},
			domain: "b.z", id: "b", reason: v1alpha1.ReasonDomainHeld},
		{name: "two status holders of the old domain, the new one taken: the younger holds nothing",
			in: Input{ClusterID: "b", Asked: "b.z", HeldID: "a", HeldDomain: "a.z",
				AskedClaims: []Claim{cl("self", 5, "b.z", Requests), cl("third", 9, "c.z", Holds)},
				HeldClaims:  []Claim{cl("self", 5, "b.z", Holds), cl("older", 1, "a.z", Holds)}},
			reason: v1alpha1.ReasonClusterIDConflict, says: []string{"ns/third"}},
		{name: "the loser of two status holders, both publishing: it yields (its records go)",
			in: Input{ClusterID: "a", Asked: "a.z", HeldID: "a", HeldDomain: "a.z",
				AskedClaims: []Claim{cl("self", 5, "a.z", Holds, Publishes, Requests),
					cl("older", 1, "a.z", Holds, Publishes, Requests)}},
			reason: v1alpha1.ReasonDomainYielded, says: []string{"held by the cluster ns/older", "removed"}},
		{name: "a loser that let go keeps yielding while its records are out",
			in: Input{ClusterID: "a", Asked: "a.z",
				AskedClaims: []Claim{cl("self", 5, "a.z", Publishes, Requests), cl("older", 1, "a.z", Holds, Publishes)}},
			reason: v1alpha1.ReasonDomainYielded, says: []string{"ns/older"}},
		{name: "a loser with a shard of its own keeps its records (its names would go unanswered)",
			in: Input{ClusterID: "a", Asked: "a.z",
				AskedClaims: []Claim{withShards(cl("self", 5, "a.z", Publishes, Requests), "x.z", "own.x.z"),
					cl("older", 1, "a.z", Holds, Publishes)}},
			reason: v1alpha1.ReasonClusterIDConflict, says: []string{"ns/older"}},
		{name: "two holders of one domain are no swap",
			in: Input{ClusterID: "a", Asked: "a.z", HeldID: "a", HeldDomain: "a.z",
				AskedClaims: []Claim{cl("self", 5, "a.z", Holds, Requests), cl("older", 1, "a.z", Holds, Requests)}},
			reason: v1alpha1.ReasonClusterIDConflict, says: []string{"held by the cluster ns/older;"}},
		{name: "the winner has not published yet: the loser's records stay (names never left unanswered)",
			in: Input{ClusterID: "a", Asked: "a.z",
				AskedClaims: []Claim{cl("self", 5, "a.z", Publishes, Requests), cl("older", 1, "a.z", Holds)}},
			reason: v1alpha1.ReasonClusterIDConflict, says: []string{"ns/older"}},
		{name: "the old domain's loser, new one taken: yields the old one",
			in: Input{ClusterID: "b", Asked: "b.z", HeldID: "a", HeldDomain: "a.z",
				AskedClaims: []Claim{cl("self", 5, "b.z", Requests), cl("third", 9, "c.z", Holds)},
				HeldClaims:  []Claim{cl("self", 5, "b.z", Holds, Publishes), cl("older", 1, "a.z", Holds, Publishes)}},
			reason: v1alpha1.ReasonDomainYielded, says: []string{"a.z is held by the cluster ns/older"}},
	} {
		tt.in.Self = self
		d := Decide(tt.in)
		c := d.Assigned
		wantStatus := metav1.ConditionFalse
		if tt.reason == v1alpha1.ReasonDomainHeld {
			wantStatus = metav1.ConditionTrue
		}
		if d.Domain != tt.domain || d.ClusterID != tt.id || c.Type != v1alpha1.ConditionDomainAssigned ||
			c.Reason != tt.reason || c.Status != wantStatus {
			t.Errorf("%s: domain %q id %q %s %s/%s (%s); want %q %q %s", tt.name, d.Domain, d.ClusterID, c.Type,
				c.Status, c.Reason, c.Message, tt.domain, tt.id, tt.reason)
		}
		for _, s := range tt.says {
			if !strings.Contains(c.Message, s) {
				t.Errorf("%s: message %q does not say %q", tt.name, c.Message, s)
			}
		}
	}
}

// TestSwapIsSymmetric: A (holding a.z) asks for b.z while B (holding b.z) asks for a.z. Each
// waits for the other to let go: both keep what they hold and both are told to use a third ID.
func TestSwapIsSymmetric(t *testing.T) {
	side := func(self, other, held, asked string, selfAge, otherAge int) Decision {
		return Decide(Input{Self: key(self), ClusterID: strings.TrimSuffix(asked, ".z"), Asked: asked,
			HeldID: strings.TrimSuffix(held, ".z"), HeldDomain: held,
			AskedClaims: []Claim{cl(self, selfAge, asked, Requests), cl(other, otherAge, held, Holds)},
			HeldClaims:  []Claim{cl(self, selfAge, asked, Holds), cl(other, otherAge, held, Requests)}})
	}
	for name, d := range map[string]Decision{"A": side("a", "b", "a.z", "b.z", 0, 5), "B": side("b", "a", "b.z",
		"a.z", 5, 0)} {
		if d.Assigned.Reason != v1alpha1.ReasonClusterIDConflict || !strings.Contains(d.Assigned.Message, "third") ||
			d.Domain != d.ClusterID+".z" || d.Domain == "" {
			t.Errorf("swap, side %s: %+v", name, d)
		}
	}
}
