package claims

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// TestReview30HAProxyClaimWithoutPolicyAPIIsRefused (review finding: an HAProxy claim in a cluster
// without ValidatingAdmissionPolicy was admitted, its shard could never be rendered, and the
// cluster's ShardsAvailable turned ApplyFailed: a tenant paging the operator at will). The claim
// is refused before anything is provisioned, saying why; a Traefik claim there is admitted.
func TestReview30HAProxyClaimWithoutPolicyAPIIsRefused(t *testing.T) {
	w := newClaimWorld(t, func(ci *v1alpha1.ClusterIngress) {
		ci.Spec.Claims.Flavours = []v1alpha1.ClaimFlavour{{Name: v1alpha1.FlavourHAProxy}}
	})
	w.user.Caps.AdmissionPolicy = false
	c := w.claim(t)
	c.Spec.Flavour = v1alpha1.FlavourHAProxy
	must(t, w.user.Client.Update(t.Context(), c))
	w.reconcile(t)
	recs := w.cluster(t).Status.Claims
	if len(recs) != 1 || recs[0].Shard != "" || recs[0].Reason != v1alpha1.ReasonClaimFlavourUnavailable {
		t.Fatalf("status.claims %+v, want the claim refused (FlavourUnavailable) with no shard", recs)
	}
	if bound := meta.FindStatusCondition(w.claim(t).Status.Conditions, "Bound"); bound == nil ||
		bound.Reason != v1alpha1.ReasonClaimFlavourUnavailable {
		t.Errorf("the claim's Bound condition %+v", bound)
	}

	w = newClaimWorld(t, nil)
	w.user.Caps.AdmissionPolicy = false
	w.reconcile(t)
	if recs := w.cluster(t).Status.Claims; len(recs) != 1 || recs[0].Shard == "" {
		t.Errorf("a claim of the default (Traefik) flavour without the policy API: %+v", recs)
	}
}
