package claims

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// grpcClaim is claim name in namespace a naming HTTPRoutes and GRPCRoutes (no Ingress).
func grpcClaim(name string, age int, httpRoutes, grpcRoutes []string) Claim {
	c := claim("a", name, age)
	for _, r := range httpRoutes {
		c.Spec.HTTPRoutes = append(c.Spec.HTTPRoutes, corev1.LocalObjectReference{Name: r})
	}
	for _, r := range grpcRoutes {
		c.Spec.GRPCRoutes = append(c.Spec.GRPCRoutes, corev1.LocalObjectReference{Name: r})
	}
	return c
}

// TestDecideBindsGRPCRoutes: a claim binds the GRPCRoutes it names like its other routes (those
// that exist, the oldest claim first, each kind by its own names); a kind the claim's routers or
// the cluster would not serve is left unbound and said, and a claim naming only such routes is
// refused (it would hold routers serving nothing).
func TestDecideBindsGRPCRoutes(t *testing.T) {
	s := v1alpha1.ClaimSettings{Allowed: true, MaxPerNamespace: 2}
	const noGRPC = "the cluster does not serve GRPCRoutes to Shardgate"
	served := func(v1alpha1.Flavour) string { return "" }
	unserved := func(v1alpha1.Flavour) string { return noGRPC }
	noGateway := func(v1alpha1.Flavour) string { return "the cluster serves no Gateway API" }
	for _, tc := range []struct {
		name      string
		claims    []Claim
		whyNoHTTP func(v1alpha1.Flavour) string
		whyNoGRPC func(v1alpha1.Flavour) string
		want      map[string]string // claim → phase, bound HTTPRoutes and GRPCRoutes, message
	}{{
		name: "GRPCRoutes bind, the oldest claim first, each kind by its own names",
		claims: []Claim{grpcClaim("late", 2, nil, []string{"rpc", "other"}),
			grpcClaim("first", 1, []string{"rpc"}, []string{"rpc", "gone"})},
		whyNoHTTP: served, whyNoGRPC: served,
		want: map[string]string{
			"first": "Bound [rpc] [rpc] shard first-a: 1 ready routers serving 0 Ingresses and 1 HTTPRoutes and 1 GRPCRoutes",
			"late":  "Bound [] [other] shard late-a: 1 ready routers serving 0 Ingresses and 1 GRPCRoutes",
		},
	}, {
		name:      "a cluster that does not serve GRPCRoutes: its HTTPRoutes bind, its GRPCRoutes are said unbound",
		claims:    []Claim{grpcClaim("first", 1, []string{"rpc"}, []string{"rpc"})},
		whyNoHTTP: served, whyNoGRPC: unserved,
		want: map[string]string{"first": "Bound [rpc] [] shard first-a: 1 ready routers serving 0 Ingresses and 1 HTTPRoutes; " +
			"its GRPCRoutes are not bound: " + noGRPC},
	}, {
		name:      "GRPCRoutes only, not served: refused before it holds routers",
		claims:    []Claim{grpcClaim("first", 1, nil, []string{"rpc"})},
		whyNoHTTP: served, whyNoGRPC: unserved,
		want: map[string]string{"first": "Failed [] [] it names Gateway API routes only, and its \"traefik\" routers " +
			"would serve none: " + noGRPC},
	}, {
		name:      "no Gateway API: both kinds refused with one reason",
		claims:    []Claim{grpcClaim("first", 1, []string{"rpc"}, []string{"rpc"})},
		whyNoHTTP: noGateway, whyNoGRPC: noGateway,
		want: map[string]string{"first": "Failed [] [] it names Gateway API routes only, and its \"traefik\" routers " +
			"would serve none: the cluster serves no Gateway API"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			out := Decide(Input{Settings: s, DefaultFlavour: v1alpha1.FlavourTraefik, Claims: tc.claims,
				WhyNoHTTPRoutes: tc.whyNoHTTP, WhyNoGRPCRoutes: tc.whyNoGRPC,
				HTTPRoutes: map[string]bool{"a/rpc": true},
				GRPCRoutes: map[string]bool{"a/rpc": true, "a/other": true, "b/other": true},
				Ready:      map[string]int32{"first-a": 1, "late-a": 1}})
			got := map[string]string{}
			for _, r := range out.Records {
				got[r.Name] = fmt.Sprintf("%s %v %v %s", r.Phase, r.HTTPRoutes, r.GRPCRoutes, r.Message)
			}
			for name, want := range tc.want {
				if got[name] != want {
					t.Errorf("%s:\n got %s\nwant %s", name, got[name], want)
				}
			}
		})
	}
}

// TestGRPCRouteKeepsItsClaimBound: the claim's Ingress and HTTPRoute gone, a GRPCRoute it binds
// keeps it bound (no reclaim grace starts); all gone, the grace starts.
func TestGRPCRouteKeepsItsClaimBound(t *testing.T) {
	s := v1alpha1.ClaimSettings{Allowed: true}
	c := grpcClaim("first", 1, []string{"web"}, []string{"rpc"})
	c.Spec.Ingresses = []corev1.LocalObjectReference{{Name: "web"}}
	rec := v1alpha1.ClaimRecord{Namespace: "a", Name: "first", Shard: "first-a", Replicas: 1, EverBound: true}
	in := Input{Settings: s, DefaultFlavour: v1alpha1.FlavourTraefik, Now: t0, Grace: time.Minute,
		Claims: []Claim{c}, Records: []v1alpha1.ClaimRecord{rec},
		GRPCRoutes: map[string]bool{"a/rpc": true}, Ready: map[string]int32{"first-a": 1}}
	out := Decide(in)
	if r := out.Records[0]; r.IngressesGoneSince != nil || r.Phase != v1alpha1.ClaimBound || r.Bound() != 1 {
		t.Errorf("with a GRPCRoute left: %+v (requeue %s)", r, out.RequeueAfter)
	}
	in.GRPCRoutes = nil
	out = Decide(in)
	if r := out.Records[0]; r.IngressesGoneSince == nil || !strings.Contains(r.Message, "every route it named is gone") {
		t.Errorf("with no route left: %+v", r)
	}
}

// TestAnUnreadableKindKeepsWhatTheClaimBound: while the cluster does not serve GRPCRoutes to
// Shardgate (not turned off on purpose), an admitted claim keeps the GRPCRoutes it bound that it
// still names, says so, and no reclaim grace starts; a new claim binds none of them.
func TestAnUnreadableKindKeepsWhatTheClaimBound(t *testing.T) {
	const why = "the cluster does not serve GRPCRoutes to Shardgate"
	c := grpcClaim("first", 1, nil, []string{"rpc"})
	rec := v1alpha1.ClaimRecord{Namespace: "a", Name: "first", Shard: "first-a", Replicas: 1, EverBound: true,
		GRPCRoutes: []string{"dropped", "rpc"}}
	in := Input{Settings: v1alpha1.ClaimSettings{Allowed: true, MaxPerNamespace: 2}, DefaultFlavour: v1alpha1.FlavourTraefik,
		Claims: []Claim{c, grpcClaim("second", 2, []string{"web"}, []string{"rpc2"})}, Records: []v1alpha1.ClaimRecord{rec},
		HTTPRoutes: map[string]bool{"a/web": true}, WhyNoGRPCRoutes: func(v1alpha1.Flavour) string { return why },
		Unreadable: map[string]bool{"GRPCRoute": true}, Ready: map[string]int32{"first-a": 1, "second-a": 1},
		Now: t0, Grace: time.Minute}
	out := Decide(in)
	first, second := out.Records[0], out.Records[1]
	if fmt.Sprint(first.GRPCRoutes) != "[rpc]" || first.IngressesGoneSince != nil || first.Phase != v1alpha1.ClaimBound ||
		!strings.HasSuffix(first.Message, "; its GRPCRoutes cannot be read now (those it bound stay bound): "+why) {
		t.Errorf("admitted: %s %v gone since %v: %s", first.Phase, first.GRPCRoutes, first.IngressesGoneSince, first.Message)
	}
	if len(second.GRPCRoutes) != 0 || !strings.HasSuffix(second.Message, "; its GRPCRoutes are not bound: "+why) {
		t.Errorf("new: binds %v: %s", second.GRPCRoutes, second.Message)
	}
}
