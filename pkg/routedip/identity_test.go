package routedip

import (
	"fmt"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// TestInstances: a provider ID is the cluster's only when the class's pattern, filled with the
// cluster's accepted ID, matches it in full and it is not overlong; without a pattern (or an ID
// the pattern needs) nothing is proven.
func TestInstances(t *testing.T) {
	const pattern = "sim://fab/{clusterID}-[a-z0-9]+"
	cases := []struct {
		name, pattern, clusterID, id string
		ok                           bool
	}{
		{"own instance", pattern, "c1", "sim://fab/c1-n1", true},
		{"another cluster's instance", pattern, "c1", "sim://fab/c2-n1", false},
		{"the seed's instance", pattern, "c1", "sim://fab/seed", false},
		{"prefix only: matched in full", pattern, "c1", "sim://fab/c1-n1/../seed", false},
		{"cluster ID is quoted, not a pattern", "sim://fab/{clusterID}", "c.", "sim://fab/cx", false},
		{"overlong", "sim://.*", "c1", "sim://" + strings.Repeat("a", MaxProviderIDLength), false},
		{"empty ID", pattern, "c1", "", false},
		{"no pattern proves nothing", "", "c1", "sim://fab/c1-n1", false},
		{"no accepted cluster ID yet", pattern, "", "sim://fab/-n1", false},
		{"pattern without the cluster ID", "sim://fab/[a-z0-9-]+", "", "sim://fab/c1-n1", true},
	}
	for _, c := range cases {
		if got := InstancesOf(c.pattern, c.clusterID).Refusal(c.id); (got == "") != c.ok {
			t.Errorf("%s: refusal %q, want accepted=%v", c.name, got, c.ok)
		}
	}
}

// TestTrusted: the class's firewall map leaves out what a record could carry from a hostile
// cluster (a foreign instance, ports beyond the class's bounds) and says so.
func TestTrusted(t *testing.T) {
	class := Class{PortLo: 30000, PortHi: 32767, MaxPorts: 2}
	in := InstancesOf("p://c1-[a-z0-9]+", "c1")
	web := []v1alpha1.FirewallPort{{Port: 80, Protocol: "TCP"}, {Port: 443, Protocol: "TCP"}}
	rec, why := Trusted(v1alpha1.RoutedIPRecord{ProviderID: "p://c1-a", MovingProviderID: "p://seed", Ports: web}, in, class)
	if rec.ProviderID != "p://c1-a" || rec.MovingProviderID != "" || len(rec.Ports) != 2 || !strings.Contains(why, "move target") {
		t.Errorf("foreign move target: %+v (%s)", rec, why)
	}
	many := append(web, v1alpha1.FirewallPort{Port: 2379, Protocol: "TCP"})
	rec, why = Trusted(v1alpha1.RoutedIPRecord{ProviderID: "p://c1-a", Ports: many}, in, class)
	if len(rec.Ports) != 0 || !strings.Contains(why, "maxPorts") {
		t.Errorf("too many ports: %+v (%s)", rec, why)
	}
	if _, why := Trusted(v1alpha1.RoutedIPRecord{ProviderID: "p://c1-a", Ports: web}, in, class); why != "" {
		t.Errorf("a trusted record reported: %s", why)
	}
}

// TestFirewallPorts: ports outside the NodePort range, valid, at most maxPorts.
func TestFirewallPorts(t *testing.T) {
	class := Class{PortLo: 30000, PortHi: 32767, MaxPorts: 2}
	cases := []struct {
		name  string
		ports []v1alpha1.FirewallPort
		want  string // "" = error
	}{
		{"web, NodePort left to the platform", []v1alpha1.FirewallPort{{Port: 443}, {Port: 80}, {Port: 31000}}, "[{80 TCP} {443 TCP}]"},
		{"more than maxPorts", []v1alpha1.FirewallPort{{Port: 80}, {Port: 443}, {Port: 10250}}, ""},
		{"not a port", []v1alpha1.FirewallPort{{Port: 70000}}, ""},
		{"not a protocol", []v1alpha1.FirewallPort{{Port: 80, Protocol: "ICMP"}}, ""},
	}
	for _, c := range cases {
		got, err := FirewallPorts(c.ports, class)
		if (err == nil) != (c.want != "") || err == nil && fmt.Sprint(got) != c.want {
			t.Errorf("%s: %v %v, want %s", c.name, got, err, c.want)
		}
	}
}
