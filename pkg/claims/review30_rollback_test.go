package claims

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// review30PreviousRecord is ClaimRecord as the previous release (4391041) knows it: no flavour,
// no httpRoutes. Its Decide builds each record from these fields of the last one and writes
// status.claims whole.
type review30PreviousRecord struct {
	Namespace          string                      `json:"namespace"`
	Name               string                      `json:"name"`
	Shard              string                      `json:"shard,omitempty"`
	Replicas           int32                       `json:"replicas,omitempty"`
	Resources          corev1.ResourceRequirements `json:"resources,omitempty"`
	Ingresses          []string                    `json:"ingresses,omitempty"`
	Phase              v1alpha1.ClaimPhase         `json:"phase,omitempty"`
	Reason             string                      `json:"reason,omitempty"`
	Message            string                      `json:"message,omitempty"`
	ReleasedGeneration int64                       `json:"releasedGeneration,omitempty"`
	EverBound          bool                        `json:"everBound,omitempty"`
	IngressesGoneSince *metav1.Time                `json:"ingressesGoneSince,omitempty"`
}

// TestReview30RollbackForgetsAnAdmittedFlavour: the operator guide guarantees a rollback to the
// previous release and the upgrade back keep claims ("a rollback keeps domain, targets,
// certificate, claims and Ready"; no router replaced unless its spec renders differently). An
// admitted HAProxy claim's record goes through one pass of the previous release (its record type
// has no flavour, and it renders every claimed shard with the first shard's flavour: Traefik
// routers, its haproxy-class Ingresses refused meanwhile) and comes back without its flavour.
// Upgraded again, the claim is a Traefik claim for good: its routers stay Traefik, and the
// unchanged claim reads EditRefused ("the edit of flavour to haproxy is refused").
func TestReview30RollbackForgetsAnAdmittedFlavour(t *testing.T) {
	s := v1alpha1.ClaimSettings{Allowed: true, Flavours: []v1alpha1.ClaimFlavour{{Name: v1alpha1.FlavourHAProxy}}}
	c := claim("a", "mine", 0, "web")
	c.Spec.Flavour = v1alpha1.FlavourHAProxy
	in := Input{Claims: []Claim{c}, Settings: s, Ingresses: map[string]bool{"a/web": true}, Ready: map[string]int32{"mine-a": 1},
		DefaultFlavour: v1alpha1.FlavourTraefik}
	admitted := Decide(in).Records
	if admitted[0].Flavour != v1alpha1.FlavourHAProxy {
		t.Fatalf("not admitted as haproxy: %+v", admitted[0])
	}
	// A pass of the previous release: its records as it writes them.
	b, _ := json.Marshal(admitted)
	var previous []review30PreviousRecord
	if err := json.Unmarshal(b, &previous); err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(previous)
	var afterRollback []v1alpha1.ClaimRecord
	if err := json.Unmarshal(b, &afterRollback); err != nil {
		t.Fatal(err)
	}
	// Upgraded again.
	in.Records = afterRollback
	r := Decide(in).Records[0]
	shard := v1alpha1.ClaimedShard(r, s, v1alpha1.FlavourTraefik)
	if shard.Flavour != v1alpha1.FlavourHAProxy || r.Reason == v1alpha1.ReasonClaimEditRefused {
		t.Errorf("an admitted HAProxy claim, after a rollback and the upgrade back, runs %s routers and reads %s: %s",
			shard.Flavour, r.Reason, r.Message)
	}
}
