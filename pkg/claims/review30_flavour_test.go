package claims

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// TestReview30UnnamedFlavourIsPinnedToTheDefaultOfTheDay: a claim that names no flavour asks for
// the cluster's default (its classless Ingresses ask for the default class). Decide records the
// default of the day ("traefik") in the record, while records written before flavours keep ""
// and follow the default. Once the cluster's default flavour changes (a cluster moved to a
// profile whose first shard is HAProxy: a supported move, TestAttackFlavourChangedOnALiveShard),
// two claims with the same spec diverge: the old record's shard becomes HAProxy (serving its
// classless Ingresses, now of the haproxy class), the new record's stays Traefik, so allocation
// refuses its classless Ingresses ("its class asks for haproxy routers"), and the claim the user
// never edited reads EditRefused ("the edit of flavour to haproxy is refused").
func TestReview30UnnamedFlavourIsPinnedToTheDefaultOfTheDay(t *testing.T) {
	const traefik, haproxy = v1alpha1.FlavourTraefik, v1alpha1.FlavourHAProxy
	s := v1alpha1.ClaimSettings{Allowed: true}
	c := claim("a", "mine", 0, "web") // spec.flavour unset
	first := Decide(Input{Claims: []Claim{c}, Settings: s, Ingresses: map[string]bool{"a/web": true},
		Ready: map[string]int32{"mine-a": 1}, DefaultFlavour: traefik})
	if len(first.Records) != 1 || first.Records[0].Shard == "" {
		t.Fatalf("not admitted: %+v", first.Records)
	}
	admitted := first.Records[0]
	// The cluster's default flavour is HAProxy now.
	again := Decide(Input{Claims: []Claim{c}, Settings: s, Records: []v1alpha1.ClaimRecord{admitted},
		Ingresses: map[string]bool{"a/web": true}, Ready: map[string]int32{"mine-a": 1}, DefaultFlavour: haproxy})
	if r := again.Records[0]; r.Reason == v1alpha1.ReasonClaimEditRefused {
		t.Errorf("a claim never edited (spec.flavour unset) reads %s: %s", r.Reason, r.Message)
	}
	preFlavours := admitted
	preFlavours.Flavour = "" // the same claim admitted by the previous release
	ci := func(rec v1alpha1.ClaimRecord) v1alpha1.Flavour {
		ci := &v1alpha1.ClusterIngress{Spec: v1alpha1.ClusterIngressSpec{
			Shards: v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default", Flavour: haproxy}}), Claims: s},
			Status: v1alpha1.ClusterIngressStatus{Claims: []v1alpha1.ClaimRecord{rec}}}
		shards := ci.Shards()
		return shards[len(shards)-1].Flavour
	}
	if got, old := ci(admitted), ci(preFlavours); got != old {
		t.Errorf("two claims of the same spec (no flavour) after the default became %s: the one admitted by this release "+
			"runs %s routers (its classless Ingresses, now of the %s class, refused), the one admitted before runs %s",
			haproxy, got, haproxy, old)
	}
}

// TestReview30RemovingAFlavourRollsItsRoutersToAnotherImage: the operator stops new HAProxy
// claims by removing haproxy from claims.flavours (docs: "refuses new claims of it and keeps the
// admitted ones running"). Every admitted HAProxy claim's Deployment changes image, from the
// operator's (say an internal mirror) to docker.io's default: a rollout nobody asked for, of a
// possibly other version, and in an air-gapped cluster one that cannot pull — with HostNetwork
// publishing (maxSurge 0, maxUnavailable 1) a one-replica claim's only router is gone first.
func TestReview30RemovingAFlavourRollsItsRoutersToAnotherImage(t *testing.T) {
	allowed := v1alpha1.ClaimSettings{Allowed: true, Publishing: v1alpha1.PublishHostNetwork,
		Flavours: []v1alpha1.ClaimFlavour{{Name: v1alpha1.FlavourHAProxy, Image: "registry.internal/haproxytech/kubernetes-ingress:1.11.12"}}}
	removed := allowed
	removed.Flavours = nil
	c := claim("a", "mine", 0, "web")
	c.Spec.Flavour = v1alpha1.FlavourHAProxy
	in := Input{Claims: []Claim{c}, Settings: allowed, Ingresses: map[string]bool{"a/web": true}, DefaultFlavour: v1alpha1.FlavourTraefik}
	rec := Decide(in).Records[0] // admitted
	in.Settings, in.Records = removed, []v1alpha1.ClaimRecord{rec}
	rec = Decide(in).Records[0] // and decided again once the flavour is no longer allowed
	before := v1alpha1.ClaimedShard(rec, allowed, v1alpha1.FlavourTraefik)
	after := v1alpha1.ClaimedShard(rec, removed, v1alpha1.FlavourTraefik)
	if before.Image != after.Image {
		t.Errorf("removing haproxy from claims.flavours changes admitted claim %s's router image %q -> %q (a rollout, "+
			"to the public default image)", rec.Shard, before.Image, after.Image)
	}
}

// TestReview30HTTPRoutesOnAFlavourWithoutGateway: a claim of flavour haproxy (whose routers serve
// no HTTPRoute: GatewayClassController() == "") naming an HTTPRoute. Allocation refuses the route
// (pinned to a shard whose routers are haproxy), taking it off the profile shard that served it,
// yet the claim reads Bound, "serving 0 Ingresses and 1 HTTPRoutes", and binds it
// (status.boundHTTPRoutes): the claim says the opposite of what happens, and nothing on the
// claim says HAProxy claims cannot serve HTTPRoutes.
func TestReview30HTTPRoutesOnAFlavourWithoutGateway(t *testing.T) {
	s := v1alpha1.ClaimSettings{Allowed: true, Flavours: []v1alpha1.ClaimFlavour{{Name: v1alpha1.FlavourHAProxy}}}
	c := claim("a", "mine", 0)
	c.Spec.Ingresses = nil
	c.Spec.HTTPRoutes = []corev1.LocalObjectReference{{Name: "checkout"}}
	c.Spec.Flavour = v1alpha1.FlavourHAProxy
	out := Decide(Input{Claims: []Claim{c}, Settings: s, HTTPRoutes: map[string]bool{"a/checkout": true},
		Ready: map[string]int32{"mine-a": 1}, DefaultFlavour: v1alpha1.FlavourTraefik,
		WhyNoHTTPRoutes: func(f v1alpha1.Flavour) string {
			if f == v1alpha1.FlavourHAProxy {
				return "haproxy routers serve no HTTPRoute"
			}
			return ""
		}})
	r := out.Records[0]
	if r.Phase == v1alpha1.ClaimBound && len(r.HTTPRoutes) > 0 && !strings.Contains(strings.ToLower(r.Message), "httproute") ||
		r.Phase == v1alpha1.ClaimBound && strings.Contains(r.Message, "serving 0 Ingresses and 1 HTTPRoutes") {
		t.Errorf("an HAProxy claim binds HTTPRoute checkout, which allocation refuses: %s/%s %q, bound HTTPRoutes %v",
			r.Phase, r.Reason, r.Message, r.HTTPRoutes)
	}
}

// TestReview30OwnersFlavourIsRepeatedUnbounded: spec.flavour is bounded (enum, maxLength 32) only
// by the IngressClaim CRD in the user cluster, which its owner O may edit. O's claim with a 64 KiB
// flavour (control characters included) is repeated verbatim into the seed's record
// (status.claims[].message, FlavourNotAllowed; the same for EditRefused), and from there into the
// claim's condition and Events: "nothing it says is repeated", "bounded".
func TestReview30OwnersFlavourIsRepeatedUnbounded(t *testing.T) {
	c := claim("a", "mine", 0, "web")
	c.Spec.Flavour = v1alpha1.Flavour("\x1b[2J" + strings.Repeat("x", 64<<10))
	out := Decide(Input{Claims: []Claim{c}, Settings: v1alpha1.ClaimSettings{Allowed: true}, Ingresses: map[string]bool{"a/web": true},
		DefaultFlavour: v1alpha1.FlavourTraefik})
	r := out.Records[0]
	if len(r.Message) > 1024 || strings.Contains(r.Message, "\x1b") {
		t.Errorf("the owner's flavour reaches the seed's record: %s, message of %d bytes", r.Reason, len(r.Message))
	}
}

// TestReview30HTTPRoutesOnlyClaimWithoutGatewayAPI: a claim naming only HTTPRoutes in a cluster
// that serves no Gateway API (Input.HTTPRoutes empty: the reconciler lists no HTTPRoute kind) is
// admitted and provisioned (routers for nothing, counted in maxPerNamespace, never reclaimed as
// nothing ever bound), and reads Bound "serving 0 Ingresses": nothing tells its tenant the
// cluster cannot serve what it names.
func TestReview30HTTPRoutesOnlyClaimWithoutGatewayAPI(t *testing.T) {
	c := claim("a", "mine", 0)
	c.Spec.Ingresses = nil
	c.Spec.HTTPRoutes = []corev1.LocalObjectReference{{Name: "checkout"}}
	out := Decide(Input{Claims: []Claim{c}, Settings: v1alpha1.ClaimSettings{Allowed: true}, Ingresses: map[string]bool{},
		HTTPRoutes: map[string]bool{}, Ready: map[string]int32{"mine-a": 1}, DefaultFlavour: v1alpha1.FlavourTraefik,
		WhyNoHTTPRoutes: func(v1alpha1.Flavour) string { return "the cluster serves no Gateway API" }})
	if r := out.Records[0]; r.Shard != "" && !strings.Contains(r.Message, "Gateway") {
		t.Errorf("an HTTPRoutes-only claim in a cluster without Gateway API gets shard %s: %s/%s %q", r.Shard, r.Phase, r.Reason, r.Message)
	}
}
