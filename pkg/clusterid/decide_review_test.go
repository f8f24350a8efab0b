package clusterid

import (
	"testing"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// TestReviewLoserWithARefusedSpecStillYields (the operator: two status holders after an older
// release's race or a hand edit — the case DomainYielded exists for — while the younger's spec is
// refused: an ID edited to an invalid one, a zone no longer served, names too long).
//
// The younger holder lets go of the domain (status.domain cleared), but Decide returns the
// refusal before yieldsTo is asked, so DomainAssigned says InvalidClusterID, never DomainYielded.
// Its records under the domain are never removed: both clusters publish the same names for as
// long as the spec stays refused, and external-dns answers either's targets. (The DNS controller
// has the same gap: on a refused spec it returns before its Decide, so even DomainYielded would
// not empty the DNSEndpoint.)
//
// What should happen: the loser of two publishing holders yields whatever its spec says now
// (a refusal can be said in the message), and the DNS controller removes its copies in that case
// too.
func TestReviewLoserWithARefusedSpecStillYields(t *testing.T) {
	winner := cl("winner", 0, "c.z", Holds, Publishes, Requests)
	self := cl("self", 5, "", Holds, Publishes)
	d := Decide(Input{Self: key("self"), ClusterID: "Not_Valid",
		Refused: &Refusal{Reason: v1alpha1.ReasonInvalidClusterID, Message: "not an RFC 1123 label"},
		HeldID:  "c", HeldDomain: "c.z", HeldClaims: []Claim{winner, self}})
	if d.Domain != "" {
		t.Fatalf("the younger of two holders keeps %q", d.Domain)
	}
	if d.Assigned.Reason != v1alpha1.ReasonDomainYielded {
		t.Fatalf("the younger of two publishing holders let go of c.z but does not yield its copies: %s: %s",
			d.Assigned.Reason, d.Assigned.Message)
	}
}
