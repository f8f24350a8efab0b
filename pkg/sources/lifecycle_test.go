package sources

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// TestDecideLifecycle: a ClusterIngress (and with it the cluster's records and objects) goes only
// for a deliberate cause, never because something could not be read, was invalid, or vanished
// for less than the grace period.
func TestDecideLifecycle(t *testing.T) {
	now := time.Unix(1e9, 0)
	grace := 5 * time.Minute
	sel := map[string]string{"env": "prod"}
	good := profile("good", time.Hour, sel)
	bad := profile("good", time.Hour, sel) // same name, found invalid
	other := profile("other", 2*time.Hour, map[string]string{"env": "dev"})
	secret := &Source{Kind: v1alpha1.SourceKindSecret, Namespace: "ns", Name: "c1", ClusterID: "c1", Labels: sel, Initialized: true}
	ci := func(profileName string, conds ...metav1.Condition) *v1alpha1.ClusterIngress {
		return &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c1"},
			Spec:   v1alpha1.ClusterIngressSpec{Profile: profileName, ClusterID: "c1", ClusterRef: v1alpha1.ClusterReference{Kind: v1alpha1.SourceKindSecret, Name: "c1"}, DNS: v1alpha1.DNSSettings{Zone: "last.good"}},
			Status: v1alpha1.ClusterIngressStatus{Conditions: conds}}
	}
	missingSince := func(ago time.Duration) metav1.Condition {
		return metav1.Condition{Type: v1alpha1.ConditionSourceAvailable, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonSourceMissing,
			LastTransitionTime: metav1.NewTime(now.Add(-ago))}
	}
	deleting := *secret
	deleting.Deleting = true
	cluster := *secret
	cluster.Kind = v1alpha1.SourceKindCluster
	paused := *secret
	paused.Paused = true

	tests := []struct {
		name   string
		in     LifecycleInput
		action LifecycleAction
		zone   string // of the applied spec
	}{
		{"selected: created", LifecycleInput{Source: secret, SourceKnown: true, Profiles: []v1alpha1.IngressProfile{good}}, LifecycleApply, "seed.zone"},
		{"invalid profile takes no new cluster", LifecycleInput{Source: secret, SourceKnown: true, Profiles: []v1alpha1.IngressProfile{bad}, Invalid: map[string]bool{"good": true}}, LifecycleKeep, ""},
		{"invalid profile in force: last good settings kept", LifecycleInput{Source: secret, SourceKnown: true, Current: ci("good"),
			Profiles: []v1alpha1.IngressProfile{bad}, Invalid: map[string]bool{"good": true}}, LifecycleApply, "last.good"},
		{"deselected by a valid profile: deleted", LifecycleInput{Source: secret, SourceKnown: true, Current: ci("other"), Profiles: []v1alpha1.IngressProfile{other}}, LifecycleDelete, ""},
		{"profile deleted: deleted", LifecycleInput{Source: secret, SourceKnown: true, Current: ci("good")}, LifecycleDelete, ""},
		{"source being deleted", LifecycleInput{Source: &deleting, SourceKnown: true, Current: ci("good"), Profiles: []v1alpha1.IngressProfile{good}}, LifecycleDelete, ""},
		// Its ClusterIngress is already gone (the source keeps a finalizer): nothing to delete.
		{"source being deleted, ClusterIngress gone", LifecycleInput{Source: &deleting, SourceKnown: true, Profiles: []v1alpha1.IngressProfile{good}}, LifecycleKeep, ""},
		{"source gone: marked, kept", LifecycleInput{SourceKnown: true, Current: ci("good"), Profiles: []v1alpha1.IngressProfile{good}}, LifecycleMarkMissing, ""},
		{"source gone within grace: kept", LifecycleInput{SourceKnown: true, Current: ci("good", missingSince(time.Minute)), Profiles: []v1alpha1.IngressProfile{good}}, LifecycleKeep, ""},
		{"source gone past grace: deleted", LifecycleInput{SourceKnown: true, Current: ci("good", missingSince(6*time.Minute)), Profiles: []v1alpha1.IngressProfile{good}}, LifecycleDelete, ""},
		{"source back within grace: adopted", LifecycleInput{Source: secret, SourceKnown: true, Current: ci("good", missingSince(time.Minute)), Profiles: []v1alpha1.IngressProfile{good}}, LifecycleApply, "seed.zone"},
		{"source unknowable (Cluster API not discovered): kept", LifecycleInput{SourceKnown: false, Current: ci("good")}, LifecycleKeep, ""},
		{"paused: not created", LifecycleInput{Source: &paused, SourceKnown: true, Profiles: []v1alpha1.IngressProfile{good}}, LifecycleKeep, ""},
		{"paused: not removed though deselected", LifecycleInput{Source: &paused, SourceKnown: true, Current: ci("other"), Profiles: []v1alpha1.IngressProfile{other}}, LifecycleKeep, ""},
		{"a Secret and a Cluster of one name: the first keeps it", LifecycleInput{Source: &cluster, SourceKnown: true, Current: ci("good"), Profiles: []v1alpha1.IngressProfile{good}}, LifecycleKeep, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Now, tt.in.Grace, tt.in.DefaultZone = now, grace, "seed.zone"
			d := DecideLifecycle(tt.in)
			if d.Action != tt.action {
				t.Fatalf("action %d (%s), want %d", d.Action, d.Why, tt.action)
			}
			if tt.zone != "" && d.Spec.DNS.Zone != tt.zone {
				t.Errorf("zone %q, want %q", d.Spec.DNS.Zone, tt.zone)
			}
			if d.Action == LifecycleApply && (d.Spec.ClusterID != "c1" || d.Spec.ClusterRef.Name != "c1") {
				t.Errorf("spec %+v", d.Spec)
			}
		})
	}
	// A cluster going away is not waited for when it cannot be observed; a deselected one is
	// cleaned up for sure.
	if d := DecideLifecycle(LifecycleInput{Source: &deleting, SourceKnown: true, Current: ci("good")}); !d.BestEffortCleanup {
		t.Error("deleting cluster: cleanup must be best-effort")
	}
	if d := DecideLifecycle(LifecycleInput{Source: secret, SourceKnown: true, Current: ci("good")}); d.Action != LifecycleDelete || d.BestEffortCleanup {
		t.Errorf("deselected cluster: %+v, want a full cleanup", d)
	}
	d := DecideLifecycle(LifecycleInput{SourceKnown: true, Current: ci("good", missingSince(time.Minute)), Now: now, Grace: grace})
	if d.RequeueAfter != 4*time.Minute {
		t.Errorf("requeue after %s, want the rest of the grace period", d.RequeueAfter)
	}
}
