package dns

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/dnsrecords"
)

func spec(id, zone string) v1alpha1.ClusterIngressSpec {
	return v1alpha1.ClusterIngressSpec{ClusterID: id, DNS: v1alpha1.ResolveDNS(v1alpha1.DNSSettings{Zone: zone}, ""),
		Shards: v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default", Publishing: v1alpha1.PublishNodePort}})}
}

func TestDecide(t *testing.T) {
	ready := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady,
			Status: corev1.ConditionTrue}},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}}}}
	shards := []dnsrecords.ShardInput{{Name: "default", Domain: "c1.z.test", Nodes: []corev1.Node{ready}}}
	old := []dnsrecords.Endpoint{{DNSName: "c1.z.test", RecordType: "A", RecordTTL: 60, Targets: []string{"10.9.9.9"}}}
	conflict := &metav1.Condition{Type: v1alpha1.ConditionDomainAssigned, Status: metav1.ConditionFalse,
		Reason:  v1alpha1.ReasonClusterIDConflict,
		Message: "cluster ID \"c1\" (c1.z.test) is held by the cluster ns/other"}
	yielded := &metav1.Condition{Type: v1alpha1.ConditionDomainAssigned, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonDomainYielded, Message: "c1.z.test is held by the cluster ns/other, which publishes"}
	heldElsewhere := &metav1.Condition{Type: v1alpha1.ConditionDomainAssigned, Status: metav1.ConditionTrue,
		Reason: v1alpha1.ReasonDomainHeld}
	for _, tt := range []struct {
		name    string
		in      Input
		write   bool
		publish bool
		wait    bool
		reason  string
	}{
		{"held, observed: publishes", Input{Held: true, Observed: true, Engaged: true, Shards: shards}, true, true,
			false, v1alpha1.ReasonPublished},
		{"contested: nothing is touched, the identity's reason and message", Input{Assigned: conflict,
			Observed: true, Engaged: true,
			Shards: shards, CurrentExists: true, Current: old}, false, false, false, v1alpha1.ReasonClusterIDConflict},
		{"yielded: its copies of the holder's names go, observed or not", Input{Assigned: yielded,
			CurrentExists: true, Current: old}, true, true, false, v1alpha1.ReasonDomainYielded},
		{"yielded, nothing left to remove", Input{Assigned: yielded, CurrentExists: true}, false, true, false,
			v1alpha1.ReasonDomainYielded},
		{"not decided on yet: nothing is said", Input{Observed: true, Engaged: true, Shards: shards}, false, false,
			true, ""},
		{"decided held, but not this domain (an older decision): nothing is said", Input{Assigned: heldElsewhere,
			Observed: true,
			Engaged:  true, Shards: shards}, false, false, true, ""},
		{"unobservable with records: kept", Input{Held: true, Engaged: true, CurrentExists: true, Current: old},
			false, false, false,
			v1alpha1.ReasonStaleRecordsKept},
		{"not engaged yet", Input{Held: true}, false, false, false, v1alpha1.ReasonConnecting},
		{"engaged, unreachable, nothing yet", Input{Held: true, Engaged: true}, false, false, false,
			v1alpha1.ReasonUnreachable},
		{"no ready node: last targets kept", Input{Held: true, Observed: true, Engaged: true, CurrentExists: true,
			Current: old,
			Shards:  []dnsrecords.ShardInput{{Name: "default", Domain: "c1.z.test"}}}, false, true, false,
			v1alpha1.ReasonKeptLastTargets},
		{"no ready node, no records: nothing to write", Input{Held: true, Observed: true, Engaged: true,
			Shards: []dnsrecords.ShardInput{{Name: "default", Domain: "c1.z.test"}}}, false, true, false,
			v1alpha1.ReasonNoReadyNodes},
	} {
		tt.in.Spec, tt.in.Domain = spec("c1", "z.test"), "c1.z.test"
		d := Decide(tt.in)
		if d.Write != tt.write || d.Publish != tt.publish || d.Wait != tt.wait || d.Published.Reason != tt.reason {
			t.Errorf("%s: write %v publish %v wait %v %s (%s); want %v %v %v %s", tt.name, d.Write, d.Publish,
				d.Wait, d.Published.Reason,
				d.Published.Message, tt.write, tt.publish, tt.wait, tt.reason)
		}
		if tt.in.Assigned != nil && !tt.wait && d.Published.Message != tt.in.Assigned.Message {
			t.Errorf("%s: DNSPublished says %q, DomainAssigned %q", tt.name, d.Published.Message, tt.in.Assigned.Message)
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
		{"blocked", &clusteraccess.State{Reason: v1alpha1.ReasonKubeconfigInvalid, Message: "user.tokenFile"}, true,
			clusteraccess.State{}, metav1.ConditionFalse, v1alpha1.ReasonKubeconfigInvalid},
		{"not engaged", nil, false, clusteraccess.State{}, metav1.ConditionUnknown, v1alpha1.ReasonConnecting},
		{"reachable", nil, true, clusteraccess.State{Phase: clusteraccess.PhaseReachable}, metav1.ConditionTrue,
			v1alpha1.ReasonReachable},
		{"refused", nil, true, clusteraccess.State{Phase: clusteraccess.PhaseUnreachable,
			Reason: string(clusteraccess.FailureCredentials), Since: since}, metav1.ConditionFalse,
			v1alpha1.ReasonCredentialsRefused},
		{"server error", nil, true, clusteraccess.State{Phase: clusteraccess.PhaseUnreachable,
			Reason: string(clusteraccess.FailureServer), Since: since}, metav1.ConditionFalse,
			v1alpha1.ReasonServerError},
		{"unreachable", nil, true, clusteraccess.State{Phase: clusteraccess.PhaseUnreachable,
			Reason: string(clusteraccess.FailureUnreachable), Since: since}, metav1.ConditionFalse,
			v1alpha1.ReasonUnreachable},
		{"over budget", nil, true, clusteraccess.State{Phase: clusteraccess.PhaseUnreachable,
			Reason: string(clusteraccess.FailureBudget), Since: since}, metav1.ConditionFalse,
			v1alpha1.ReasonObjectBudgetExceeded},
		{"connecting", nil, true, clusteraccess.State{Phase: clusteraccess.PhaseConnecting},
			metav1.ConditionUnknown, v1alpha1.ReasonConnecting},
	} {
		c := Reachable(tt.blocked, tt.engaged, tt.st)
		if c.Status != tt.status || c.Reason != tt.reason {
			t.Errorf("%s: %s/%s, want %s/%s", tt.name, c.Status, c.Reason, tt.status, tt.reason)
		}
	}
}
