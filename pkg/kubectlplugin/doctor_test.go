package kubectlplugin

import (
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

func doctorCluster(conds ...metav1.Condition) *v1alpha1.ClusterIngress {
	ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "c"}}
	ci.Status.Domain = "c.zone.test"
	ci.Status.Conditions = conds
	ci.Status.Shards = []v1alpha1.ShardStatus{{Name: "default", Domain: "c.zone.test", Targets: []string{"10.0.0.1", "10.0.0.2"}}}
	return ci
}

func c(typ string, s metav1.ConditionStatus, reason string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: s, Reason: reason, Message: typ + " says " + reason}
}

var doctorNow = time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)

func causes(d Diagnosis) []string {
	var out []string
	for _, f := range d.Findings {
		out = append(out, f.Cause)
	}
	return out
}

func TestDiagnose(t *testing.T) {
	ready := c(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReady)
	published := c(v1alpha1.ConditionDNSPublished, metav1.ConditionTrue, v1alpha1.ReasonPublished)
	answered := map[string]DNSAnswer{"default": {Name: "shardgate-doctor.c.zone.test", Addresses: []string{"10.0.0.2", "10.0.0.1"}}}
	canaryFailing := func(ci *v1alpha1.ClusterIngress) *v1alpha1.ClusterIngress {
		ci.Status.Canaries = []v1alpha1.CanaryStatus{
			{Shard: "default", Conditions: []metav1.Condition{c(v1alpha1.ConditionRoutesServing, metav1.ConditionFalse, v1alpha1.ReasonNotAnswering)}},
			{Shard: "public", Conditions: []metav1.Condition{c(v1alpha1.ConditionRoutesServing, metav1.ConditionTrue, v1alpha1.ReasonServing)}}}
		return ci
	}
	for _, tc := range []struct {
		name    string
		ci      *v1alpha1.ClusterIngress
		answers map[string]DNSAnswer
		want    []string
	}{
		{name: "a healthy cluster", ci: doctorCluster(published, ready), answers: answered},
		{
			name: "causes first: unreachable before its stale records, certificate and canary after",
			ci: canaryFailing(doctorCluster(
				c(v1alpha1.ConditionCertificateReady, metav1.ConditionFalse, v1alpha1.ReasonChallengeFailed),
				c(v1alpha1.ConditionDNSPublished, metav1.ConditionTrue, v1alpha1.ReasonStaleRecordsKept),
				c(v1alpha1.ConditionClusterReachable, metav1.ConditionFalse, v1alpha1.ReasonUnreachable),
				c(v1alpha1.ConditionReady, metav1.ConditionFalse, "ClusterReachable"))),
			answers: answered,
			want: []string{"ClusterReachable=False/Unreachable", "DNSPublished=True/ClusterUnreachableRecordsKept",
				"CertificateReady=False/DNS01ChallengeFailed", "shard default: RoutesServing=False/NotAnswering"},
		},
		{
			name: "a cluster being provisioned, a certificate being issued, a routed IP moving: nothing wrong",
			ci: doctorCluster(c(v1alpha1.ConditionClusterReachable, metav1.ConditionFalse, v1alpha1.ReasonControlPlaneNotReady),
				c(v1alpha1.ConditionCertificateReady, metav1.ConditionFalse, v1alpha1.ReasonCertificateIssuing),
				c(v1alpha1.ConditionRoutedIPsAssigned, metav1.ConditionFalse, v1alpha1.ReasonRoutedIPMoving), published),
			want: nil,
		},
		{
			name: "shards without a ready router before the last targets kept",
			ci: doctorCluster(c(v1alpha1.ConditionDNSPublished, metav1.ConditionTrue, v1alpha1.ReasonKeptLastTargets),
				c(v1alpha1.ConditionShardsAvailable, metav1.ConditionFalse, v1alpha1.ReasonNoRouterReady)),
			want: []string{"ShardsAvailable=False/NoRouterReady", "DNSPublished=True/NoReadyNodesKeptLastTargets"},
		},
		{
			name:    "published, but the zone answers something else, before the canary",
			ci:      canaryFailing(doctorCluster(published, ready)),
			answers: map[string]DNSAnswer{"default": {Name: "shardgate-doctor.c.zone.test", Addresses: []string{"10.0.0.9"}}},
			want:    []string{"DNSAnswer: shard default", "shard default: RoutesServing=False/NotAnswering"},
		},
		{
			name: "a name that does not resolve, before the certificate",
			ci: doctorCluster(published,
				c(v1alpha1.ConditionCertificateReady, metav1.ConditionFalse, v1alpha1.ReasonIssuanceQueued)),
			answers: map[string]DNSAnswer{"default": {Name: "shardgate-doctor.c.zone.test", Error: "no such host"}},
			want:    []string{"DNSAnswer: shard default", "CertificateReady=False/IssuanceQueued"},
		},
		{
			name: "an unreachable cluster's shards are Unknown, its stale canary not requested: the cause alone",
			ci: func() *v1alpha1.ClusterIngress {
				ci := doctorCluster(c(v1alpha1.ConditionClusterReachable, metav1.ConditionFalse, v1alpha1.ReasonUnreachable),
					c(v1alpha1.ConditionShardsAvailable, metav1.ConditionUnknown, v1alpha1.ReasonConnecting))
				ci.Status.Canaries = []v1alpha1.CanaryStatus{{Shard: "default", Conditions: []metav1.Condition{
					c(v1alpha1.ConditionRoutesServing, metav1.ConditionFalse, v1alpha1.ReasonNoRouterReady)}}}
				return ci
			}(),
			want: []string{"ClusterReachable=False/Unreachable"},
		},
		{
			name: "a shard with one of two routers ready, before its DNS",
			ci: func() *v1alpha1.ClusterIngress {
				ci := doctorCluster(published, ready)
				ci.Spec.Shards = []v1alpha1.ShardSpec{{Name: "default", Replicas: ptr.To[int32](2)}}
				ci.Status.Shards[0].ReadyReplicas, ci.Status.Shards[0].ReadyNodes = 1, []string{"node-1"}
				return ci
			}(),
			answers: map[string]DNSAnswer{"default": {Name: "shardgate-doctor.c.zone.test", Addresses: []string{"10.0.0.1"}}},
			want:    []string{"shard default: routers not ready", "DNSAnswer: shard default"},
		},
		{
			name: "a router not ready, then a cordoned node and a sick one, each named, before the DNS answer",
			ci: func() *v1alpha1.ClusterIngress {
				ci := doctorCluster(published, ready)
				ci.Spec.Shards = []v1alpha1.ShardSpec{{Name: "default", Replicas: ptr.To[int32](4)}}
				ci.Status.Shards[0].ReadyReplicas, ci.Status.Shards[0].ReadyNodes = 3, []string{"node-1"}
				ci.Status.Shards[0].NodesLeftOut = []v1alpha1.NodeLeftOut{{Name: "node-2", Reason: v1alpha1.NodeCordoned},
					{Name: "node-3", Reason: v1alpha1.NodeNotReady}, {Name: "node-4", Reason: v1alpha1.NodeCordoned}}
				return ci
			}(),
			answers: map[string]DNSAnswer{"default": {Name: "shardgate-doctor.c.zone.test", Addresses: []string{"10.0.0.1"}}},
			want: []string{"shard default: routers not ready", "shard default: node node-2, node-4 cordoned",
				"shard default: node node-3 not ready", "DNSAnswer: shard default"},
		},
		{
			name: "not Ready for a reason doctor has no step for: Ready's own message",
			ci:   doctorCluster(published, c(v1alpha1.ConditionReady, metav1.ConditionFalse, "Whatever")),
			want: []string{"Ready=False/Whatever"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Diagnose(tc.ci, doctorNow, tc.answers)
			if got := causes(d); strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("causes %q, want %q", got, tc.want)
			}
			for _, f := range d.Findings {
				if strings.Contains(f.Cause, "cordoned") && !strings.Contains(f.Next, "kubectl uncordon node-2") {
					t.Errorf("a cordon's next step names no uncordon: %+v", f)
				}
				if f.Next == "" || (f.Severity != severityCritical && f.Severity != severityWarning) {
					t.Errorf("finding %+v has no next step or severity", f)
				}
			}
		})
	}
}

func TestDiagnoseExpiringCertificate(t *testing.T) {
	ci := doctorCluster(c(v1alpha1.ConditionCertificateReady, metav1.ConditionTrue, v1alpha1.ReasonCertificateIssued))
	ci.Status.Certificate = &v1alpha1.CertificateStatus{SerialNumber: "ab", NotAfter: &metav1.Time{Time: doctorNow.Add(13 * 24 * time.Hour)}}
	d := Diagnose(ci, doctorNow, nil)
	if got := causes(d); len(got) != 1 || got[0] != "Certificate expiry" || !strings.Contains(d.Findings[0].Message, "312h") {
		t.Errorf("findings %+v", d.Findings)
	}
	ci.Status.Certificate.NotAfter = &metav1.Time{Time: doctorNow.Add(30 * 24 * time.Hour)}
	if d := Diagnose(ci, doctorNow, nil); len(d.Findings) != 0 {
		t.Errorf("a certificate 30 days from expiry: %+v", d.Findings)
	}
}

// A shard's next step names the shard the message names, ready to paste; a message that names
// none (or not as a shard name can be) leaves the placeholder.
func TestDiagnoseNamesTheShardInItsNextStep(t *testing.T) {
	for msg, want := range map[string]string{
		"haproxy: no router pod is ready yet":                               "shardgate.io/shard=haproxy)",
		"haproxy: no router pod is ready yet; edge: router not created yet": "'shardgate.io/shard in (haproxy,edge)')",
		"router role missing":                                               "shardgate.io/shard=SHARD)",
		"a b: no router":                                                    "shardgate.io/shard=SHARD)",
	} {
		cond := c(v1alpha1.ConditionShardsAvailable, metav1.ConditionFalse, v1alpha1.ReasonNoRouterReady)
		cond.Message = msg
		d := Diagnose(doctorCluster(cond), doctorNow, nil)
		if len(d.Findings) == 0 || !strings.Contains(d.Findings[0].Next, want) {
			t.Errorf("%q: %+v, want a next step with %s", msg, d.Findings, want)
		}
	}
}

// Every runbook doctor points at is a section of docs/runbooks.md.
func TestDoctorRunbooksExist(t *testing.T) {
	b, err := os.ReadFile("../../docs/runbooks.md")
	if err != nil {
		t.Fatal(err)
	}
	var all []step
	for _, st := range canarySteps {
		all = append(all, st)
	}
	for _, s := range steps {
		for _, st := range s.byReason {
			all = append(all, st)
		}
	}
	for _, st := range append(all, step{runbook: "ShardgateCertificateExpiringSoon"}, step{runbook: "ShardgateDNSNotAnswered"}) {
		if st.runbook != "" && !strings.Contains(string(b), "\n## "+st.runbook+"\n") {
			t.Errorf("docs/runbooks.md has no section %s", st.runbook)
		}
	}
}

// Doctor's probe name can be no shard's own domain: shard names are DNS labels, the probe's
// label has an underscore (a claim "shardgate" in namespace "doctor" is shard shardgate-doctor).
func TestDoctorProbeIsNoShardName(t *testing.T) {
	if len(validation.IsDNS1123Label(doctorProbe)) == 0 {
		t.Errorf("%s could be a shard's name", doctorProbe)
	}
}

// TestDiagnoseLoad: a saturated shard and clamped reports are findings with the next step; a
// cluster whose shards are within capacity has none.
func TestDiagnoseLoad(t *testing.T) {
	ready := c(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReady)
	published := c(v1alpha1.ConditionDNSPublished, metav1.ConditionTrue, v1alpha1.ReasonPublished)
	calm := doctorCluster(published, ready, c(v1alpha1.ConditionShardsSaturated, metav1.ConditionFalse, v1alpha1.ReasonWithinCapacity))
	if d := Diagnose(calm, doctorNow, nil); len(d.Findings) != 0 {
		t.Errorf("within capacity: %v", causes(d))
	}
	hot := doctorCluster(published, ready, c(v1alpha1.ConditionShardsSaturated, metav1.ConditionTrue, v1alpha1.ReasonSaturated))
	hot.Status.ShardLoad = []v1alpha1.ShardLoadStatus{{Shard: "default", State: v1alpha1.LoadSaturated, Clamped: "x: rps"}}
	d := Diagnose(hot, doctorNow, nil)
	got := causes(d)
	if len(got) != 2 || got[0] != "ShardsSaturated=True/Saturated" || got[1] != "shard default: load reports clamped" ||
		d.Findings[0].Runbook != "ShardgateShardSaturated" || !strings.Contains(d.Findings[0].Next, "add routers") {
		t.Errorf("saturated: %+v", d.Findings)
	}
}

// TestDiagnoseHeldFlavourChange: a held flavour change is a warning with its message and the next
// step; none while no change is held.
func TestDiagnoseHeldFlavourChange(t *testing.T) {
	ready := c(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReady)
	published := c(v1alpha1.ConditionDNSPublished, metav1.ConditionTrue, v1alpha1.ReasonPublished)
	held := c(v1alpha1.ConditionFlavourChangesHeld, metav1.ConditionTrue, v1alpha1.ReasonRoutesBlockChange)
	held.Message = "shard b keeps its traefik routers (spec: haproxy) until ..."
	d := Diagnose(doctorCluster(published, ready, held), doctorNow, nil)
	if got := causes(d); len(got) != 1 || got[0] != "FlavourChangesHeld=True/RoutesBlockChange" ||
		d.Findings[0].Message != held.Message || !strings.Contains(d.Findings[0].Next, "kubectl shardgate explain") {
		t.Errorf("held: %+v", d.Findings)
	}
	if d := Diagnose(doctorCluster(published, ready), doctorNow, nil); len(d.Findings) != 0 {
		t.Errorf("nothing held: %v", causes(d))
	}
}
