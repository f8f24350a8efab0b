package routedip

import (
	"fmt"
	"testing"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

func TestDesiredFirewall(t *testing.T) {
	web := []v1alpha1.FirewallPort{{Port: 80, Protocol: "TCP"}, {Port: 443, Protocol: "TCP"}}
	recs := []v1alpha1.RoutedIPRecord{
		{Address: "1", ProviderID: "p://b", MovingProviderID: "p://c", Ports: web},
		{Address: "2", ProviderID: "p://a", Ports: web[:1]},
		{Address: "3"}, // held by nobody yet: opens nothing
	}
	if got := fmt.Sprint(DesiredFirewall(recs, false)); got != "[{80 TCP [p://a p://b p://c]} {443 TCP [p://b p://c]}]" {
		t.Errorf("pre-allow: %s", got)
	}
	if got := fmt.Sprint(DesiredFirewall(recs, true)); got != "[{80 TCP [p://a p://b]} {443 TCP [p://b]}]" {
		t.Errorf("post-allow: %s", got)
	}
	if FirewallHash(DesiredFirewall(recs, false)) == FirewallHash(DesiredFirewall(recs, true)) {
		t.Error("different maps, same hash")
	}
	if !Opens(DesiredFirewall(recs, false), "p://c", web) || Opens(DesiredFirewall(recs, true), "p://c", web) {
		t.Error("Opens")
	}
}

func TestPortsOutside(t *testing.T) {
	lo, hi, err := ParseNodePortRange("")
	if err != nil || lo != 30000 || hi != 32767 {
		t.Fatalf("default range: %d-%d %v", lo, hi, err)
	}
	got := PortsOutside([]v1alpha1.FirewallPort{{Port: 443}, {Port: 31000, Protocol: "TCP"}, {Port: 80, Protocol: "TCP"}, {Port: 443, Protocol: "TCP"}}, lo, hi)
	if fmt.Sprint(got) != "[{80 TCP} {443 TCP}]" {
		t.Errorf("got %v", got)
	}
	for _, bad := range []string{"1", "5-2", "0-10", "a-b", "1-70000"} {
		if _, _, err := ParseNodePortRange(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
