package claims

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/render"
)

// limits wires Decide to render.ClaimLimits as the claims reconciler does, for a cluster with the
// admission policy API and Gateway API served to the routers.
func limits(in *Input) {
	in.WhyUnclaimable = func(f v1alpha1.Flavour) string { why, _ := render.ClaimLimits(f, true, true); return why }
	in.WhyNoHTTPRoutes = func(f v1alpha1.Flavour) string { _, why := render.ClaimLimits(f, true, true); return why }
}

// TestReview30bRefusedFlavourEditUnbindsHTTPRoutes: a claim admitted without a flavour (the
// cluster's default, Traefik, whose routers serve HTTPRoutes) binds an HTTPRoute. Its tenant then
// edits spec.flavour to haproxy, which Decide refuses (EditRefused: "a claim's flavour is fixed
// once admitted; its traefik routers stay"). But noRoutes is computed from cmp.Or(rec.Flavour,
// flavour) = the refused spec's flavour, so the refused edit unbinds the HTTPRoute from the
// Traefik shard that still runs: allocation moves it off the claimed shard, and with no route left
// bound the reclaim grace starts and, past it, the claim is released or deleted (reclaimPolicy
// Delete). A refused edit must change nothing.
func TestReview30bRefusedFlavourEditUnbindsHTTPRoutes(t *testing.T) {
	s := v1alpha1.ClaimSettings{Allowed: true, MaxPerNamespace: 2,
		Flavours: []v1alpha1.ClaimFlavour{{Name: v1alpha1.FlavourHAProxy}}}
	c := claim("a", "web", 0)
	c.Spec.HTTPRoutes = []corev1.LocalObjectReference{{Name: "web"}}
	in := Input{Claims: []Claim{c}, Settings: s, DefaultFlavour: v1alpha1.FlavourTraefik, ClusterDomain: "c1.z",
		HTTPRoutes: map[string]bool{"a/web": true}, Ready: map[string]int32{"web-a": 1}, Now: t0, Grace: time.Minute}
	limits(&in)
	first := Decide(in)
	if len(first.Records) != 1 || first.Records[0].Shard == "" || len(first.Records[0].HTTPRoutes) != 1 {
		t.Fatalf("not admitted with its HTTPRoute: %+v", first.Records)
	}
	// The tenant edits the flavour: refused, the Traefik routers stay.
	c.Spec.Flavour, c.Generation = v1alpha1.FlavourHAProxy, 2
	in.Claims, in.Records = []Claim{c}, first.Records
	again := Decide(in)
	r := again.Records[0]
	if r.Reason != v1alpha1.ReasonClaimEditRefused {
		t.Fatalf("the flavour edit is not refused: %+v", r)
	}
	if len(r.HTTPRoutes) != 1 || r.IngressesGoneSince != nil {
		t.Errorf("a refused flavour edit unbound the claim's HTTPRoute from its still-running Traefik shard "+
			"(bound %v, reclaim grace started %v): %s", r.HTTPRoutes, r.IngressesGoneSince, r.Message)
	}
}

// TestReview30bAdmittedClaimKeepsTheGatewayCanaryLabel: bc86aba reserves shardgate-canary-gateway
// for new claimed shards only. A claim "shardgate-canary" in namespace "gateway" admitted by the
// previous release holds shard shardgate-canary-gateway, whose domain
// shardgate-canary-gateway.<cluster domain> is exactly the default shard's Gateway canary host
// (names.CanaryGatewayHost(cluster domain)): DNS sends the seed's Gateway canary request to the
// claimed shard's routers, which do not route it, so the default shard's RoutesServing turns False
// and CanaryFailing pages the operator for every cluster with such a claim after the upgrade. A
// profile shard taking a claim's name moves the claim (ShardNameTaken); the reserved label does not.
func TestReview30bAdmittedClaimKeepsTheGatewayCanaryLabel(t *testing.T) {
	const cd = "c1.z"
	if names.CanaryGatewayHost(names.ShardDomain(v1alpha1.DefaultShardName, cd)) != names.ShardDomain(names.CanaryGatewayLabel, cd) {
		t.Fatalf("premise: the default shard's Gateway canary host is not shard %s's domain", names.CanaryGatewayLabel)
	}
	s := v1alpha1.ClaimSettings{Allowed: true, MaxPerNamespace: 1}
	c := claim("gateway", "shardgate-canary", 0, "web")
	prev := v1alpha1.ClaimRecord{Namespace: "gateway", Name: "shardgate-canary", Shard: names.CanaryGatewayLabel, Replicas: 1,
		EverBound: true, Ingresses: []string{"web"}, Phase: v1alpha1.ClaimBound}
	in := Input{Claims: []Claim{c}, Settings: s, Records: []v1alpha1.ClaimRecord{prev}, DefaultFlavour: v1alpha1.FlavourTraefik,
		ClusterDomain: cd, ProfileShards: []string{v1alpha1.DefaultShardName}, Ingresses: map[string]bool{"gateway/web": true},
		Ready: map[string]int32{names.CanaryGatewayLabel: 1}}
	limits(&in)
	out := Decide(in)
	if r := out.Records[0]; r.Shard == names.CanaryGatewayLabel {
		t.Errorf("an admitted claim keeps shard %s, whose domain is the default shard's Gateway canary host "+
			"shardgate-canary-gateway.%s (%s: %s)", r.Shard, cd, r.Reason, strings.TrimSpace(r.Message))
	}
}
