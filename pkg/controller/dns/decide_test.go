package dns

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/dnsrecords"
)

func spec(id, zone string) v1alpha1.ClusterIngressSpec {
	return v1alpha1.ClusterIngressSpec{ClusterID: id, DNS: v1alpha1.ResolveDNS(v1alpha1.DNSSettings{Zone: zone}, ""),
		Shards: v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default", Publishing: v1alpha1.PublishNodePort}})}
}

func TestRequestedDomain(t *testing.T) {
	for _, tt := range []struct {
		name, id, zone string
		served         []string
		domain, reason string
	}{
		{"usable", "c1", "z.test", nil, "c1.z.test", ""},
		{"served subzone", "c1", "a.z.test", []string{"z.test"}, "c1.a.z.test", ""},
		{"not served", "c1", "other.test", []string{"z.test"}, "", v1alpha1.ReasonZoneNotServed},
		{"bad zone", "c1", "bad_zone", nil, "", v1alpha1.ReasonInvalidZone},
		{"bad ID", "C_1", "z.test", nil, "", v1alpha1.ReasonInvalidClusterID},
		{"ID over the registry budget", strings.Repeat("c", 58), "z.test", nil, "", v1alpha1.ReasonNamesTooLong},
	} {
		d, cond := RequestedDomain(spec(tt.id, tt.zone), tt.served)
		if d != tt.domain || (cond == nil) != (tt.reason == "") || (cond != nil && cond.Reason != tt.reason) {
			t.Errorf("%s: %q %+v; want %q %s", tt.name, d, cond, tt.domain, tt.reason)
		}
	}
}

func TestDecide(t *testing.T) {
	self, other := types.NamespacedName{Namespace: "ns", Name: "self"}, types.NamespacedName{Namespace: "ns", Name: "other"}
	ready := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}}}}
	shards := []dnsrecords.ShardInput{{Name: "default", Domain: "c1.z.test", Nodes: []corev1.Node{ready}}}
	old := []dnsrecords.Endpoint{{DNSName: "c1.z.test", RecordType: "A", RecordTTL: 60, Targets: []string{"10.9.9.9"}}}
	for _, tt := range []struct {
		name   string
		in     Input
		write  bool
		hold   bool
		reason string
	}{
		{"holder, observed: publishes", Input{Self: self, Holder: self, Observed: true, Engaged: true, Shards: shards}, true, true, v1alpha1.ReasonPublished},
		{"contested: nothing is touched", Input{Self: self, Holder: other, Observed: true, Engaged: true, Shards: shards, CurrentExists: true, Current: old}, false, false, v1alpha1.ReasonClusterIDConflict},
		{"unobservable with records: kept", Input{Self: self, Holder: self, Engaged: true, CurrentExists: true, Current: old}, false, false, v1alpha1.ReasonStaleRecordsKept},
		{"not engaged yet", Input{Self: self, Holder: self}, false, false, v1alpha1.ReasonConnecting},
		{"engaged, unreachable, nothing yet", Input{Self: self, Holder: self, Engaged: true}, false, false, v1alpha1.ReasonUnreachable},
		{"no ready node: last targets kept", Input{Self: self, Holder: self, Observed: true, Engaged: true, CurrentExists: true, Current: old,
			Shards: []dnsrecords.ShardInput{{Name: "default", Domain: "c1.z.test"}}}, false, true, v1alpha1.ReasonKeptLastTargets},
		{"no ready node, no records: nothing to write", Input{Self: self, Holder: self, Observed: true, Engaged: true,
			Shards: []dnsrecords.ShardInput{{Name: "default", Domain: "c1.z.test"}}}, false, true, v1alpha1.ReasonNoReadyNodes},
	} {
		tt.in.Spec, tt.in.Domain = spec("c1", "z.test"), "c1.z.test"
		d := Decide(tt.in)
		if d.Write != tt.write || d.Hold != tt.hold || d.Published.Reason != tt.reason {
			t.Errorf("%s: write %v hold %v %s (%s); want %v %v %s", tt.name, d.Write, d.Hold, d.Published.Reason, d.Published.Message, tt.write, tt.hold, tt.reason)
		}
	}
}

func TestReachable(t *testing.T) {
	since := time.Unix(1e9, 0)
	for _, tt := range []struct {
		name    string
		blocked *clusteraccess.State
		engaged bool
		st      clusteraccess.State
		status  metav1.ConditionStatus
		reason  string
	}{
		{"blocked", &clusteraccess.State{Reason: v1alpha1.ReasonKubeconfigInvalid, Message: "user.tokenFile"}, true, clusteraccess.State{}, metav1.ConditionFalse, v1alpha1.ReasonKubeconfigInvalid},
		{"not engaged", nil, false, clusteraccess.State{}, metav1.ConditionUnknown, v1alpha1.ReasonConnecting},
		{"reachable", nil, true, clusteraccess.State{Phase: clusteraccess.PhaseReachable}, metav1.ConditionTrue, v1alpha1.ReasonReachable},
		{"refused", nil, true, clusteraccess.State{Phase: clusteraccess.PhaseUnreachable, Reason: string(clusteraccess.FailureCredentials), Since: since}, metav1.ConditionFalse, v1alpha1.ReasonCredentialsRefused},
		{"server error", nil, true, clusteraccess.State{Phase: clusteraccess.PhaseUnreachable, Reason: string(clusteraccess.FailureServer), Since: since}, metav1.ConditionFalse, v1alpha1.ReasonServerError},
		{"unreachable", nil, true, clusteraccess.State{Phase: clusteraccess.PhaseUnreachable, Reason: string(clusteraccess.FailureUnreachable), Since: since}, metav1.ConditionFalse, v1alpha1.ReasonUnreachable},
		{"over budget", nil, true, clusteraccess.State{Phase: clusteraccess.PhaseUnreachable, Reason: string(clusteraccess.FailureBudget), Since: since}, metav1.ConditionFalse, v1alpha1.ReasonObjectBudgetExceeded},
		{"connecting", nil, true, clusteraccess.State{Phase: clusteraccess.PhaseConnecting}, metav1.ConditionUnknown, v1alpha1.ReasonConnecting},
	} {
		c := Reachable(tt.blocked, tt.engaged, tt.st)
		if c.Status != tt.status || c.Reason != tt.reason {
			t.Errorf("%s: %s/%s, want %s/%s", tt.name, c.Status, c.Reason, tt.status, tt.reason)
		}
	}
}
