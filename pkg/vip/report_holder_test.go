package vip

import (
	"net/netip"
	"testing"
	"time"
)

// TestMayStartWaitsForAHolderWithoutConfig (attacker review): a peer whose fresh report says it holds a VIP but
// carries no config digest (its agent restarted while the keepalived container kept running with
// the old peer list, or the report was written before the digest) does not hold the newcomer back:
// the newcomer hears no adverts from it and takes the VIP too (two masters).
func TestMayStartWaitsForAHolderWithoutConfig(t *testing.T) {
	now := time.Now()
	reports := map[string]NodeReport{
		"old": {Node: "old", Held: []netip.Addr{netip.MustParseAddr("10.0.0.10")}, Expires: now.Add(time.Minute)},
	}
	if ok, _ := MayStart("new", []string{"new", "old"}, reports, now); ok {
		t.Fatal("newcomer may start while a fresh peer reports holding a VIP with an unknown configuration")
	}
}
