package routedip

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/vip"
)

func TestAdmit(t *testing.T) {
	pool, err := vip.ParsePool([]string{"203.0.113.10-203.0.113.19"})
	if err != nil {
		t.Fatal(err)
	}
	classes := map[string]Class{
		"open":   {Name: "open", Pool: pool, AllowOwners: true},
		"shards": {Name: "shards", Pool: pool},
		"prod":   {Name: "prod", Pool: pool, AllowOwners: true, Profiles: []string{"prod"}},
		"broken": {Name: "broken", Pool: pool, Invalid: "bad"},
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	claim := func(key, class, addr string, age int, shard bool) Claim {
		return Claim{Key: "ns/" + key, Namespace: "ns", ClassName: class, Address: addr, ServiceName: "svc", Created: t0.Add(time.Duration(age) * time.Minute), Shard: shard}
	}
	cases := []struct {
		name       string
		claims     []Claim
		taken      map[string]string
		wantReason []string // per claim in the input's order ("" = admitted)
	}{
		{"admitted", []Claim{claim("a", "open", "203.0.113.10", 0, false)}, nil, []string{""}},
		{"unknown class", []Claim{claim("a", "nope", "203.0.113.10", 0, false)}, nil, []string{v1alpha1.ReasonClassNotFound}},
		{"unusable class", []Claim{claim("a", "broken", "203.0.113.10", 0, true)}, nil, []string{v1alpha1.ReasonClassInvalid}},
		{"owners not allowed", []Claim{claim("a", "shards", "203.0.113.10", 0, false)}, nil, []string{v1alpha1.ReasonClassNotAllowed}},
		{"shards allowed", []Claim{claim("a", "shards", "203.0.113.10", 0, true)}, nil, []string{""}},
		{"other profile", []Claim{claim("a", "prod", "203.0.113.10", 0, true)}, nil, []string{v1alpha1.ReasonClassNotAllowed}},
		{"outside the class", []Claim{claim("a", "open", "198.51.100.1", 0, false)}, nil, []string{v1alpha1.ReasonAddressNotInClass}},
		{"not an address", []Claim{claim("a", "open", "10.0.0.1.evil", 0, false)}, nil, []string{v1alpha1.ReasonAddressNotInClass}},
		{"another namespace's Service", []Claim{func() Claim {
			c := claim("a", "open", "203.0.113.10", 0, false)
			c.ServiceNamespace = "kube-system"
			return c
		}()}, nil, []string{v1alpha1.ReasonServiceNotAllowed}},
		{"more ports than the class opens", []Claim{func() Claim {
			c := claim("a", "open", "203.0.113.10", 0, false)
			c.Ports = []v1alpha1.FirewallPort{{Port: 80}, {Port: 2379}, {Port: 10250}}
			return c
		}()}, nil, []string{v1alpha1.ReasonTooManyPorts}},
		{"held by another cluster", []Claim{claim("a", "open", "203.0.113.10", 0, true)}, map[string]string{"203.0.113.10": "cluster x/y"}, []string{v1alpha1.ReasonAddressInUse}},
		{"oldest claim wins", []Claim{claim("young", "open", "203.0.113.10", 5, false), claim("old", "open", "203.0.113.10", 1, false)}, nil, []string{v1alpha1.ReasonAddressInUse, ""}},
		{"a shard's claim wins over an older owner's", []Claim{claim("owner", "open", "203.0.113.10", 0, false), claim("shard", "open", "203.0.113.10", 9, true)}, nil, []string{v1alpha1.ReasonAddressInUse, ""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := map[string]Verdict{}
			for _, v := range Admit(c.claims, "dev", classes, c.taken) {
				got[v.Key] = v
			}
			for i, cl := range c.claims {
				v := got[cl.Key]
				if v.Admitted != (c.wantReason[i] == "") || v.Reason != c.wantReason[i] {
					t.Errorf("%s: admitted %v reason %q (%s), want reason %q", cl.Key, v.Admitted, v.Reason, v.Message, c.wantReason[i])
				}
			}
		})
	}
}

// TestFrozen: a class that cannot be found or is unusable freezes its records; every other
// refusal drops them.
func TestFrozen(t *testing.T) {
	for reason, want := range map[string]bool{v1alpha1.ReasonClassNotFound: true, v1alpha1.ReasonClassInvalid: true,
		v1alpha1.ReasonClassNotAllowed: false, v1alpha1.ReasonAddressInUse: false, v1alpha1.ReasonAddressNotInClass: false} {
		if got := Frozen(Verdict{Reason: reason}); got != want {
			t.Errorf("%s: frozen %v", reason, got)
		}
	}
	if Frozen(Verdict{Admitted: true}) {
		t.Error("an admitted verdict frozen")
	}
}

// TestClassOfNeedsProviderIDPattern: a class without a pattern that proves instances, or with
// one that does not compile, is unusable.
func TestClassOfNeedsProviderIDPattern(t *testing.T) {
	job := batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}}}}
	for pattern, valid := range map[string]bool{"": false, "p://{clusterID}-(": false, "p://{clusterID}-[a-z]+": true} {
		c := ClassOf(&v1alpha1.ClusterRoutedIPClass{Spec: v1alpha1.ClusterRoutedIPClassSpec{Addresses: []string{"203.0.113.1/32"},
			ProviderIDPattern: pattern, UpdateRoutedIP: job, UpdateFirewall: job}})
		if (c.Invalid == "") != valid {
			t.Errorf("pattern %q: invalid %q", pattern, c.Invalid)
		}
	}
}
