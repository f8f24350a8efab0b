package validation

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

func TestValidate(t *testing.T) {
	good := &v1alpha1.IngressProfile{}
	if errs := Profile(good, "seed.example"); len(errs) != 0 {
		t.Fatalf("default profile invalid: %v", errs)
	}
	if errs := Profile(good, ""); len(errs) != 1 || Reason(errs) != v1alpha1.ReasonInvalidZone {
		t.Fatalf("no zone anywhere must be invalid: %v", errs)
	}
	bad := &v1alpha1.IngressProfile{Spec: v1alpha1.IngressProfileSpec{
		ClusterSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Nope"}}},
		DNS:             v1alpha1.DNSSettings{Zone: "under_score.example"},
		Shards:          []v1alpha1.ShardSpec{{Name: "a"}, {Name: "a"}, {Name: "b", Replicas: ptr.To[int32](0)}},
	}}
	errs := Profile(bad, "seed.example")
	msg := errs.ToAggregate().Error()
	for _, want := range []string{"spec.clusterSelector", "spec.dns.zone", "spec.shards[1].name: Duplicate", "spec.shards[2].replicas"} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing %q in %s", want, msg)
		}
	}
	if Reason(errs) != v1alpha1.ReasonClusterSelectorBad {
		t.Errorf("reason %s", Reason(errs))
	}
	// Values the CRD's enums would refuse are refused here too (objects written before the
	// enums, or by a client that skips validation, never reach a controller unchecked).
	enums := &v1alpha1.IngressProfile{Spec: v1alpha1.IngressProfileSpec{
		Allocation:   v1alpha1.AllocationSettings{Strategy: "Fastest", NamespaceOwnership: "Loose", WildcardPolicy: "Maybe"},
		IngressClass: v1alpha1.IngressClassSettings{Default: "Always"},
		Shards:       []v1alpha1.ShardSpec{{Name: "s", Publishing: "Carrier", Flavour: "nginx", NamespaceSelector: &metav1LabelSelectorBad}, {Name: strings.Repeat("s", 58)}},
	}}
	msg = Profile(enums, "seed.example").ToAggregate().Error()
	for _, want := range []string{"spec.allocation.strategy", "spec.allocation.namespaceOwnership", "spec.allocation.wildcardPolicy",
		"spec.ingressClass.default", "spec.shards[0].publishing", "spec.shards[0].flavour", "spec.shards[0].namespaceSelector", "spec.shards[1].name"} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing %q in %s", want, msg)
		}
	}
}

func TestValidateTLS(t *testing.T) {
	hour := func(h float64) *metav1.Duration {
		return &metav1.Duration{Duration: time.Duration(h * float64(time.Hour))}
	}
	issuer := &v1alpha1.IssuerReference{Name: "letsencrypt", Kind: v1alpha1.KindClusterIssuer}
	for _, tt := range []struct {
		name string
		tls  v1alpha1.TLSSettings
		want []string // fields with a problem; none means valid
	}{
		{"off", v1alpha1.TLSSettings{}, nil},
		{"issuer only", v1alpha1.TLSSettings{IssuerRef: issuer}, nil},
		{"durations", v1alpha1.TLSSettings{IssuerRef: issuer, Duration: hour(24), RenewBefore: hour(8)}, nil},
		{"enabled without issuer", v1alpha1.TLSSettings{Enabled: ptr.To(true)}, []string{"spec.tls.issuerRef"}},
		{"disabled without issuer", v1alpha1.TLSSettings{Enabled: ptr.To(false)}, nil},
		{"bad issuer", v1alpha1.TLSSettings{IssuerRef: &v1alpha1.IssuerReference{Name: "Bad_Name", Kind: "Vault", Group: "not a group"}},
			[]string{"spec.tls.issuerRef.name", "spec.tls.issuerRef.kind", "spec.tls.issuerRef.group"}},
		{"short duration", v1alpha1.TLSSettings{IssuerRef: issuer, Duration: hour(0.5)}, []string{"spec.tls.duration"}},
		{"tiny renewBefore", v1alpha1.TLSSettings{IssuerRef: issuer, RenewBefore: hour(0.01)}, []string{"spec.tls.renewBefore"}},
		{"renewBefore past duration", v1alpha1.TLSSettings{IssuerRef: issuer, Duration: hour(2), RenewBefore: hour(2)}, []string{"spec.tls.renewBefore"}},
		{"renewBefore past the default duration", v1alpha1.TLSSettings{IssuerRef: issuer, RenewBefore: hour(24 * 91)}, []string{"spec.tls.renewBefore"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &v1alpha1.IngressProfile{Spec: v1alpha1.IngressProfileSpec{TLS: tt.tls}}
			errs := Profile(p, "seed.example")
			if len(errs) != len(tt.want) {
				t.Fatalf("errors %v, want problems in %v", errs, tt.want)
			}
			for i, f := range tt.want {
				if errs[i].Field != f {
					t.Errorf("error %d in %s, want %s", i, errs[i].Field, f)
				}
			}
			if len(errs) > 0 && Reason(errs) != v1alpha1.ReasonTLSInvalid {
				t.Errorf("reason %s", Reason(errs))
			}
		})
	}
}

var metav1LabelSelectorBad = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "In"}}}

func TestValidateVIP(t *testing.T) {
	ms := func(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
	for _, tt := range []struct {
		name  string
		shard v1alpha1.ShardSpec
		want  []string // fields in error
	}{
		{"VIP shard taking the cluster's pool", v1alpha1.ShardSpec{Name: "a", Publishing: v1alpha1.PublishVIP}, nil},
		{"full settings", v1alpha1.ShardSpec{Name: "a", Publishing: v1alpha1.PublishVIP, VIP: &v1alpha1.VIPSettings{
			Pool: []string{"192.0.2.0/28", "192.0.2.20-192.0.2.29"}, Count: 2, VRRP: v1alpha1.VRRPMulticast, AdvertInterval: ms(100 * time.Millisecond)}}, nil},
		{"vip on a HostNetwork shard", v1alpha1.ShardSpec{Name: "a", Publishing: v1alpha1.PublishHostNetwork, VIP: &v1alpha1.VIPSettings{}}, []string{"s[0].vip"}},
		{"bad pool, count, vrrp, interval", v1alpha1.ShardSpec{Name: "a", Publishing: v1alpha1.PublishVIP, VIP: &v1alpha1.VIPSettings{
			Pool: []string{"192.0.2.1/28"}, Count: 17, VRRP: "Broadcast", AdvertInterval: ms(15 * time.Millisecond)}},
			[]string{"s[0].vip.pool", "s[0].vip.count", "s[0].vip.vrrp", "s[0].vip.advertInterval"}},
		{"interval too long", v1alpha1.ShardSpec{Name: "a", Publishing: v1alpha1.PublishVIP, VIP: &v1alpha1.VIPSettings{AdvertInterval: ms(time.Minute)}}, []string{"s[0].vip.advertInterval"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, e := range Shards([]v1alpha1.ShardSpec{tt.shard}, field.NewPath("s")) {
				got = append(got, e.Field)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("errors in %v, want %v", got, tt.want)
			}
		})
	}
}

func TestValidateProfileVIP(t *testing.T) {
	for _, tt := range []struct {
		name string
		vip  v1alpha1.ClusterVIPSettings
		want []string // fields in error
	}{
		{"none", v1alpha1.ClusterVIPSettings{}, nil},
		{"full settings", v1alpha1.ClusterVIPSettings{Pool: []string{"192.0.2.0/28"}, L2Domain: "hall-1",
			RouterIDs: &v1alpha1.RouterIDRange{First: 50, Last: 50}}, nil},
		{"bad pool, domain and backwards range", v1alpha1.ClusterVIPSettings{Pool: []string{"192.0.2.1/28"}, L2Domain: "Hall 1",
			RouterIDs: &v1alpha1.RouterIDRange{First: 9, Last: 8}}, []string{"v.pool", "v.l2Domain", "v.routerIDs"}},
		{"range beyond 255", v1alpha1.ClusterVIPSettings{RouterIDs: &v1alpha1.RouterIDRange{First: 200, Last: 256}}, []string{"v.routerIDs"}},
		{"range from 0", v1alpha1.ClusterVIPSettings{RouterIDs: &v1alpha1.RouterIDRange{First: 0, Last: 10}}, []string{"v.routerIDs"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, e := range ProfileVIP(tt.vip, field.NewPath("v")) {
				got = append(got, e.Field)
			}
			got = slices.Compact(got)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("errors in %v, want %v", got, tt.want)
			}
		})
	}
}
