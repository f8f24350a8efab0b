package vip

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// The race of a joining router: n3's configuration names n1, n2 and n3, but n1 (the master of
// the VIPs) still runs the configuration without n3, so it sends n3 no adverts. n3 must not start
// keepalived until every live peer runs a configuration naming it.
func TestMayStart(t *testing.T) {
	now := time.Now()
	fresh, stale := now.Add(3*time.Second), now.Add(-time.Second)
	running := func(node string, expires time.Time, peers ...string) NodeReport {
		return NodeReport{Node: node, Config: "digest-" + strings.Join(peers, ""), Peers: peers, Expires: expires}
	}
	all := []string{"n1", "n2", "n3"}
	for _, tc := range []struct {
		name    string
		nodes   []string
		reports map[string]NodeReport
		want    bool
		why     string
	}{
		{name: "not in the configuration yet", nodes: []string{"n1", "n2"}, why: "does not name n3"},
		{name: "alone", nodes: []string{"n3"}, want: true},
		{name: "no peer reports (none runs keepalived)", nodes: all, want: true},
		{name: "a live peer runs the old configuration", nodes: all, why: "still running a configuration without n3: n1",
			reports: map[string]NodeReport{"n1": running("n1", fresh, "n1", "n2"), "n2": running("n2", fresh, "n1", "n2", "n3")}},
		{name: "every live peer runs a configuration naming it", nodes: all, want: true,
			reports: map[string]NodeReport{"n1": running("n1", fresh, "n1", "n2", "n3"), "n2": running("n2", fresh, "n1", "n2", "n3")}},
		{name: "both live peers run the old configuration", nodes: all, why: "without n3: n1, n2",
			reports: map[string]NodeReport{"n1": running("n1", fresh, "n1", "n2"), "n2": running("n2", fresh, "n1", "n2")}},
		{name: "a dead peer's report expired", nodes: all, want: true,
			reports: map[string]NodeReport{"n1": running("n1", stale, "n1", "n2"), "n2": running("n2", fresh, "n1", "n2", "n3")}},
		{name: "a peer that has not started keepalived (another newcomer)", nodes: all, want: true,
			reports: map[string]NodeReport{"n1": {Node: "n1", Expires: fresh}, "n2": running("n2", fresh, "n2", "n3")}},
		{name: "a report naming another node is no report of this one", nodes: all, want: true,
			reports: map[string]NodeReport{"n1": running("n9", fresh, "n1")}},
		{name: "its own old report does not hold it back", nodes: all, want: true,
			reports: map[string]NodeReport{"n3": running("n3", fresh, "n1")}},
		{name: "a live node the configuration no longer names does not count", nodes: []string{"n1", "n3"}, want: true,
			reports: map[string]NodeReport{"n1": running("n1", fresh, "n1", "n3"), "n2": running("n2", fresh, "n1", "n2")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := MayStart("n3", tc.nodes, tc.reports, now)
			if got != tc.want || !strings.Contains(why, tc.why) || got != (why == "") {
				t.Errorf("MayStart = %v %q, want %v %q", got, why, tc.want, tc.why)
			}
		})
	}
}

func TestConfigNodes(t *testing.T) {
	conf, err := KeepalivedConfig(KeepalivedInput{Shard: "edge", HealthFile: "/run/h", AliveFile: "/run/a",
		Instances: []Instance{{VIP: netip.MustParseAddr("192.0.2.1"), RouterID: 1}},
		Nodes:     []Node{{Name: "n2", Address: netip.MustParseAddr("10.0.0.2")}, {Name: "n1.example", Address: netip.MustParseAddr("10.0.0.1")}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(ConfigNodes(conf)); got != "[n1.example n2]" {
		t.Errorf("ConfigNodes = %s\n%s", got, conf)
	}
	if got := ConfigNodes("# waiting for VIPs\n"); len(got) != 0 {
		t.Errorf("ConfigNodes of the waiting configuration = %v", got)
	}
}

// A report goes through its Lease and back; what a hostile cluster writes there is bounded.
func TestNodeReportRoundTrip(t *testing.T) {
	now := time.Now().Truncate(time.Microsecond)
	r := NodeReport{Node: "n1", Config: "abc", Peers: []string{"n1", "n2"}, Held: []netip.Addr{netip.MustParseAddr("192.0.2.1")}}
	lease := func(a map[string]string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Annotations: a}, Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To("n1"), RenewTime: &metav1.MicroTime{Time: now}, LeaseDurationSeconds: ptr.To[int32](6)}}
	}
	got, ok := ParseReport(lease(r.Annotations()))
	r.Expires = now.Add(6 * time.Second)
	if !ok || fmt.Sprint(got) != fmt.Sprint(r) {
		t.Errorf("round trip: %+v, want %+v", got, r)
	}
	notRunning := NodeReport{Node: "n1", Held: r.Held}
	if got, _ := ParseReport(lease(notRunning.Annotations())); got.Running() || len(got.Peers) != 0 || len(got.Held) != 1 {
		t.Errorf("a node not running keepalived: %+v", got)
	}
	hostile := lease(map[string]string{ReportConfigAnnotation: "x", ReportHeldAnnotation: "192.0.2.1,<script>,," + strings.Repeat("192.0.2.9,", 1000),
		ReportPeersAnnotation: strings.Repeat("n,", 1000)})
	if got, _ := ParseReport(hostile); len(got.Held) > maxReportedHeld || len(got.Held) == 0 || len(got.Peers) != maxReportedPeers {
		t.Errorf("hostile report: %d held, %d peers", len(got.Held), len(got.Peers))
	}
	if _, ok := ParseReport(&coordinationv1.Lease{}); ok {
		t.Error("an empty Lease is a report")
	}
}

func TestHoldersAndSplits(t *testing.T) {
	now := time.Now()
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	reports := []NodeReport{
		{Node: "n1", Held: []netip.Addr{a}, Expires: now.Add(time.Second)},
		{Node: "n2", Held: []netip.Addr{a, b}, Expires: now.Add(time.Second)},
		{Node: "n3", Held: []netip.Addr{b}, Expires: now.Add(-time.Second)},
		{Node: "intruder", Held: []netip.Addr{b}, Expires: now.Add(time.Second)},
	}
	h := Holders(reports, func(n string) bool { return n != "intruder" }, now)
	if fmt.Sprint(h[a]) != "[n1 n2]" || fmt.Sprint(h[b]) != "[n2]" {
		t.Fatalf("holders: %v", h)
	}
	vips := []v1alpha1.ShardVIPs{{Shard: "edge", Addresses: []v1alpha1.VIPAddress{{Address: "192.0.2.1", Holder: "old"}, {Address: "192.0.2.2"}, {Address: "192.0.2.3", Holder: "old"}}}}
	problems := FillHolders(vips, map[string]map[netip.Addr][]string{"edge": h})
	got := []string{vips[0].Addresses[0].Holder, vips[0].Addresses[1].Holder, vips[0].Addresses[2].Holder}
	if fmt.Sprint(got) != "[ n2 ]" || len(problems) != 1 || problems[0].Reason != v1alpha1.ReasonDuplicateHolder ||
		problems[0].Message != "shard edge: VIP 192.0.2.1 is held by n1 and n2 at once" {
		t.Errorf("holders %q, problems %+v", got, problems)
	}
	c := Available(vips, problems)
	if c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonDuplicateHolder {
		t.Errorf("condition: %+v", c)
	}
}
