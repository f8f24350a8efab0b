package kubectlplugin

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// O (owner of a user cluster, with its own API server) names a node as it likes: the DNS
// controller copies node names into status.shards[].readyNodes unvalidated (the CRD has no
// pattern), and doctor prints them raw in the "routers not ready" finding. A newline forges a
// whole finding with a harmful next step; ESC sequences rewrite the operator's terminal.
func TestAttackDoctorNodeNamesReachTheTerminalRaw(t *testing.T) {
	ci := doctorCluster(c(v1alpha1.ConditionDNSPublished, metav1.ConditionTrue, v1alpha1.ReasonPublished),
		c(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReady))
	ci.Spec.Shards = []v1alpha1.ShardSpec{{Name: "default", Replicas: ptr.To[int32](2)}}
	ci.Status.Shards[0].ReadyReplicas = 1
	ci.Status.Shards[0].ReadyNodes = []string{"node-1\n  1. [critical] SourceAvailable=False/SourceMissing\n" +
		"     next: kubectl delete clusteringress -A --all\x1b]8;;http://evil.example/\x07x\x1b[2K"}
	var out bytes.Buffer
	printDiagnoses(&out, []Diagnosis{Diagnose(ci, doctorNow, nil)})
	for _, r := range out.String() {
		if r == 0x1b || r == 0x07 {
			t.Fatalf("doctor printed a terminal control character from a node name:\n%q", out.String())
		}
	}
	if strings.Contains(out.String(), "\n     next: kubectl delete") {
		t.Fatalf("a node name forged a next step on a line of its own:\n%s", out.String())
	}
}

// ShardsAvailable=Unknown while the cluster is reachable is a real, persistent failure (reading
// the TLS input, the identity, the cache: shards/reconciler.go) and keeps Ready False. Doctor
// skips every Unknown and shows Ready's message only when nothing else was found, so any
// unrelated warning (RoutesProtected on Kubernetes < 1.30) hides why the cluster is not Ready.
func TestAttackDoctorUnknownShardsHiddenByAnotherFinding(t *testing.T) {
	ci := doctorCluster(
		c(v1alpha1.ConditionClusterReachable, metav1.ConditionTrue, v1alpha1.ReasonReachable),
		c(v1alpha1.ConditionShardsAvailable, metav1.ConditionUnknown, v1alpha1.ReasonConnecting),
		c(v1alpha1.ConditionDNSPublished, metav1.ConditionTrue, v1alpha1.ReasonPublished),
		c(v1alpha1.ConditionRoutesProtected, metav1.ConditionFalse, v1alpha1.ReasonPolicyUnsupported),
		c(v1alpha1.ConditionReady, metav1.ConditionFalse, "ShardsAvailable"))
	d := Diagnose(ci, doctorNow, nil)
	for _, f := range d.Findings {
		if strings.Contains(f.Cause, "ShardsAvailable") || strings.HasPrefix(f.Cause, "Ready=") {
			return
		}
	}
	t.Errorf("not Ready because of ShardsAvailable=Unknown, but doctor only says %q", causes(d))
}

// ObjectBudgetExceeded (O makes it by creating objects) and ServerError (HTTP 4xx answers) have
// their own steps in docs/runbooks.md; doctor sends the operator to check that the API server is
// up and reachable, which it is.
func TestAttackDoctorClusterReachableReasonsNextStep(t *testing.T) {
	for _, reason := range []string{v1alpha1.ReasonObjectBudgetExceeded, v1alpha1.ReasonServerError} {
		ci := doctorCluster(c(v1alpha1.ConditionClusterReachable, metav1.ConditionFalse, reason))
		d := Diagnose(ci, doctorNow, nil)
		if len(d.Findings) != 1 {
			t.Fatalf("%s: %+v", reason, d.Findings)
		}
		if strings.Contains(d.Findings[0].Next, "up and reachable") {
			t.Errorf("%s: next step %q (the server answers; docs/runbooks.md says otherwise)", reason, d.Findings[0].Next)
		}
	}
}

// DNSPublished=False/NoReadyNodes (no ingress node ready, no records at all: every name of the
// cluster is NXDOMAIN) falls to the catch-all "read the message (the domain, the zone or the
// profile)", with no runbook; Unreachable/Connecting (never observed) likewise.
func TestAttackDoctorNoReadyNodesNextStep(t *testing.T) {
	ci := doctorCluster(c(v1alpha1.ConditionDNSPublished, metav1.ConditionFalse, v1alpha1.ReasonNoReadyNodes))
	d := Diagnose(ci, doctorNow, nil)
	if len(d.Findings) == 0 {
		t.Fatal("no finding")
	}
	f := d.Findings[0]
	if strings.Contains(f.Next, "the domain, the zone or the profile") || f.Runbook == "" {
		t.Errorf("NoReadyNodes: next %q, runbook %q", f.Next, f.Runbook)
	}
}

// The chart's ShardgateCertificateExpiringSoon now weighs the time left against the lifetime
// (less than a quarter left); doctor still uses a flat 14 days. A 7-day certificate with 3 days
// left is on schedule (renewed at 2.3 days left) yet doctor says "renewal is failing".
func TestAttackDoctorShortLivedCertificateOnSchedule(t *testing.T) {
	ci := doctorCluster(c(v1alpha1.ConditionCertificateReady, metav1.ConditionTrue, v1alpha1.ReasonCertificateIssued))
	ci.Status.Certificate = &v1alpha1.CertificateStatus{SerialNumber: "ab",
		NotBefore: &metav1.Time{Time: doctorNow.Add(-4 * 24 * time.Hour)},
		NotAfter:  &metav1.Time{Time: doctorNow.Add(3 * 24 * time.Hour)}}
	if d := Diagnose(ci, doctorNow, nil); len(d.Findings) != 0 {
		t.Errorf("a 7-day certificate 4 days in: %+v", d.Findings)
	}
}

// An expired certificate (ShardgateCertificateExpired, critical) is told as a warning pointing at
// the ExpiringSoon runbook, "expires ... (in -5h0m0s)".
func TestAttackDoctorExpiredCertificateIsCritical(t *testing.T) {
	ci := doctorCluster(c(v1alpha1.ConditionCertificateReady, metav1.ConditionTrue, v1alpha1.ReasonCertificateIssued))
	ci.Status.Certificate = &v1alpha1.CertificateStatus{SerialNumber: "ab",
		NotAfter: &metav1.Time{Time: doctorNow.Add(-5 * time.Hour)}}
	d := Diagnose(ci, doctorNow, nil)
	if len(d.Findings) != 1 || d.Findings[0].Severity != severityCritical || d.Findings[0].Runbook != "ShardgateCertificateExpired" {
		t.Errorf("an expired certificate: %+v", d.Findings)
	}
}

// A lookup doctor could not make (the --dns-server does not answer, or the 30 s budget shared by
// every shard's 5 s lookups ran out) is reported like a name that does not resolve: critical,
// "check external-dns and the zone's delegation". With 7 shards and a silent server, the later
// shards fail at once with the budget spent.
func TestAttackDoctorLookupTimeoutBlamesExternalDNS(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0") // answers nothing
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	ci := doctorCluster(c(v1alpha1.ConditionDNSPublished, metav1.ConditionTrue, v1alpha1.ReasonPublished))
	ci.Status.Shards = append(ci.Status.Shards, v1alpha1.ShardStatus{Name: "b", Domain: "b.c.zone.test", Targets: []string{"10.0.0.3"}})
	d := Diagnose(ci, doctorNow, lookUpShards(ci, resolver(ctx, pc.LocalAddr().String())))
	for _, f := range d.Findings {
		if strings.HasPrefix(f.Cause, "DNSAnswer") && f.Severity == severityCritical && strings.Contains(f.Next, "external-dns") {
			t.Errorf("doctor's own lookup timeout reported as DNS not answered: %+v", f)
		}
	}
}

// A LoadBalancer shard whose Service has a hostname (AWS ELB and the like) publishes a CNAME:
// status.shards[].targets is the hostname (dnsrecords.desiredShard), and LookupHost follows the
// CNAME to addresses. Doctor compares addresses with the hostname and reports a DNS problem on
// every healthy such cluster.
func TestAttackDoctorCNAMETargetAlwaysMismatches(t *testing.T) {
	ci := doctorCluster(c(v1alpha1.ConditionDNSPublished, metav1.ConditionTrue, v1alpha1.ReasonPublished),
		c(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReady))
	ci.Status.Shards[0].Targets = []string{"a1b2.elb.eu-west-1.amazonaws.com"}
	answers := lookUpShards(ci, func(name string) ([]string, error) {
		return []string{"198.51.100.10", "198.51.100.11"}, nil // what the CNAME resolves to
	})
	if d := Diagnose(ci, doctorNow, answers); len(d.Findings) != 0 {
		t.Errorf("a healthy CNAME-published shard: %+v", d.Findings)
	}
}
