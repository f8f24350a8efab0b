package claims

import (
	"strings"
	"testing"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// TestDecideFlavours: a claim may ask for the default flavour or one claims.flavours allows; the
// flavour admitted is recorded and fixed; records from before flavours keep the default.
func TestDecideFlavours(t *testing.T) {
	const traefik, haproxy = v1alpha1.FlavourTraefik, v1alpha1.FlavourHAProxy
	withHAProxy := v1alpha1.ClaimSettings{Allowed: true, Flavours: []v1alpha1.ClaimFlavour{{Name: haproxy}}}
	ings := map[string]bool{"a/web": true}
	ready := map[string]int32{"mine-a": 1}
	asking := func(f v1alpha1.Flavour) Claim {
		c := claim("a", "mine", 0, "web")
		c.Spec.Flavour = f
		return c
	}
	admitted := func(f v1alpha1.Flavour) []v1alpha1.ClaimRecord {
		return []v1alpha1.ClaimRecord{{Namespace: "a", Name: "mine", Shard: "mine-a", Replicas: 1, Flavour: f}}
	}
	cases := []struct {
		name     string
		claim    Claim
		settings v1alpha1.ClaimSettings
		records  []v1alpha1.ClaimRecord
		// want is phase:reason:flavour recorded; message, when set, is part of the record's message.
		want, message string
	}{
		// Recorded only when asked for: a claim naming none follows the cluster's default.
		{"no flavour: the default", asking(""), v1alpha1.ClaimSettings{Allowed: true}, nil,
			"Bound:Bound:", ""},
		{"the default flavour by name needs no entry", asking(traefik), v1alpha1.ClaimSettings{Allowed: true}, nil,
			"Bound:Bound:traefik", ""},
		{"another flavour the profile allows", asking(haproxy), withHAProxy, nil, "Bound:Bound:haproxy", ""},
		{"another flavour the profile does not allow", asking(haproxy), v1alpha1.ClaimSettings{Allowed: true}, nil,
			"Failed:FlavourNotAllowed:", "allowed traefik"},
		{"admitted: stays when the profile stops allowing it", asking(haproxy), v1alpha1.ClaimSettings{Allowed: true},
			admitted(haproxy), "Bound:Bound:haproxy", ""},
		{"admitted: an edit to another flavour is refused, the admitted one stays", asking(traefik), withHAProxy,
			admitted(haproxy), "Bound:EditRefused:haproxy", `flavour to "traefik" is refused`},
		{"a record from before flavours is the default flavour's: no edit", asking(""), withHAProxy,
			admitted(""), "Bound:Bound:", ""},
		{"a record from before flavours: asking for another is an edit", asking(haproxy), withHAProxy,
			admitted(""), "Bound:EditRefused:", "its traefik routers stay"},
		{"over the limits and a flavour edit: both told", func() Claim { c := asking(traefik); c.Spec.Replicas = 9; return c }(),
			withHAProxy, admitted(haproxy), "Bound:EditRefused:haproxy", `resources stay; the edit of flavour to "traefik"`},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			out := Decide(Input{Claims: []Claim{tt.claim}, Settings: tt.settings, Records: tt.records, Ingresses: ings,
				Ready: ready, DefaultFlavour: traefik})
			if len(out.Records) != 1 {
				t.Fatalf("records %+v", out.Records)
			}
			r := out.Records[0]
			if got := string(r.Phase) + ":" + r.Reason + ":" + string(r.Flavour); got != tt.want {
				t.Errorf("got %s, want %s (%s)", got, tt.want, r.Message)
			}
			if !strings.Contains(r.Message, tt.message) {
				t.Errorf("message %q, want it to say %q", r.Message, tt.message)
			}
		})
	}
}

// TestClaimedShardFlavour: a claimed shard runs the flavour admitted, with the settings' image for
// the default flavour and the flavour entry's image for another.
func TestClaimedShardFlavour(t *testing.T) {
	s := v1alpha1.ClaimSettings{Image: "t:1", Flavours: []v1alpha1.ClaimFlavour{{Name: v1alpha1.FlavourHAProxy, Image: "h:1"}}}
	for _, tt := range []struct {
		admitted, wantFlavour v1alpha1.Flavour
		settings              v1alpha1.ClaimSettings
		wantImage             string
	}{
		{"", v1alpha1.FlavourTraefik, s, "t:1"},
		{v1alpha1.FlavourTraefik, v1alpha1.FlavourTraefik, s, "t:1"},
		{v1alpha1.FlavourHAProxy, v1alpha1.FlavourHAProxy, s, "h:1"},
		// No longer allowed: it keeps running, on its flavour's default image.
		{v1alpha1.FlavourHAProxy, v1alpha1.FlavourHAProxy, v1alpha1.ClaimSettings{Image: "t:1"}, ""},
	} {
		got := v1alpha1.ClaimedShard(v1alpha1.ClaimRecord{Shard: "x", Flavour: tt.admitted}, tt.settings, v1alpha1.FlavourTraefik)
		if got.Flavour != tt.wantFlavour || got.Image != tt.wantImage {
			t.Errorf("admitted %q: shard %s image %q, want %s %q", tt.admitted, got.Flavour, got.Image, tt.wantFlavour, tt.wantImage)
		}
	}
}
