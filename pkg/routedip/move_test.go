package routedip

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

func TestAdvance(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	since := metav1.NewTime(now.Add(-10 * time.Second))
	later := metav1.NewTime(now.Add(time.Minute))
	rec := func(node, moving string, failures int32) v1alpha1.RoutedIPRecord {
		r := v1alpha1.RoutedIPRecord{Address: "203.0.113.10", ClassName: "c", Node: node, MovingTo: moving, Failures: failures}
		if moving != "" {
			r.MovingSince, r.MovingProviderID = &since, "p://"+moving
		}
		return r
	}
	cases := []struct {
		name                    string
		in                      MoveInput
		wantNode, wantMoving    string
		wantReason              string
		wantCreate, wantDelete  bool
		wantFailures            int32
		wantEventWarning, moved bool
	}{
		{name: "first assignment starts a Job", in: MoveInput{Record: rec("", "", 0), Target: "b", TargetProviderID: "p://b", FirewallOpen: true},
			wantMoving: "b", wantReason: v1alpha1.ReasonRoutedIPMoving, wantCreate: true},
		{name: "waits for the firewall", in: MoveInput{Record: rec("a", "", 0), Target: "b", TargetProviderID: "p://b"},
			wantNode: "a", wantMoving: "b", wantReason: v1alpha1.ReasonRoutedIPMoving},
		{name: "held by the target: nothing to do", in: MoveInput{Record: rec("b", "", 0), Target: "b", FirewallOpen: true},
			wantNode: "b", wantReason: v1alpha1.ReasonRoutedIPsAssigned},
		{name: "a running Job is waited for", in: MoveInput{Record: rec("a", "b", 0), Target: "b", FirewallOpen: true, Job: &JobObservation{Name: "j", Target: "b"}},
			wantNode: "a", wantMoving: "b", wantReason: v1alpha1.ReasonRoutedIPMoving},
		{name: "a succeeded Job moves the holder", in: MoveInput{Record: rec("a", "b", 0), Target: "b", FirewallOpen: true, Job: &JobObservation{Name: "j", Target: "b", TargetProviderID: "p://b", Done: true, Succeeded: true}},
			wantNode: "b", wantReason: v1alpha1.ReasonRoutedIPsAssigned, wantDelete: true, moved: true},
		{name: "a failed Job keeps the old holder and backs off", in: MoveInput{Record: rec("a", "b", 0), Target: "b", FirewallOpen: true, Job: &JobObservation{Name: "j", Target: "b", Done: true, Message: "boom"}},
			wantNode: "a", wantMoving: "b", wantReason: v1alpha1.ReasonMoveFailed, wantDelete: true, wantFailures: 1, wantEventWarning: true},
		{name: "no Job before the backoff ends", in: MoveInput{Record: func() v1alpha1.RoutedIPRecord { r := rec("a", "b", 1); r.RetryAfter = &later; return r }(), Target: "b", FirewallOpen: true},
			wantNode: "a", wantMoving: "b", wantReason: v1alpha1.ReasonMoveFailed, wantFailures: 1},
		{name: "after the backoff, a new Job", in: MoveInput{Record: rec("a", "b", 1), Target: "b", FirewallOpen: true},
			wantNode: "a", wantMoving: "b", wantReason: v1alpha1.ReasonMoveFailed, wantCreate: true, wantFailures: 1},
		{name: "a new target resets the failures", in: MoveInput{Record: rec("a", "b", 3), Target: "c", TargetProviderID: "p://c", FirewallOpen: true},
			wantNode: "a", wantMoving: "c", wantReason: v1alpha1.ReasonRoutedIPMoving, wantCreate: true},
		{name: "a record whose move was not written is rebuilt from the Job", in: MoveInput{Record: rec("a", "", 0), Target: "b", FirewallOpen: true,
			Job: &JobObservation{Name: "j", Target: "b", TargetProviderID: "p://b", Done: true, Succeeded: true}},
			wantNode: "b", wantReason: v1alpha1.ReasonRoutedIPsAssigned, wantDelete: true, moved: true},
		{name: "no eligible node keeps the holder", in: MoveInput{Record: rec("a", "", 0), Why: "none"},
			wantNode: "a", wantReason: v1alpha1.ReasonNoEligibleNode},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.in.Now = now
			out := Advance(c.in)
			r := out.Record
			if r.Node != c.wantNode || r.MovingTo != c.wantMoving || r.Reason != c.wantReason || r.Failures != c.wantFailures {
				t.Errorf("record node %q moving %q reason %q failures %d; want %q %q %q %d", r.Node, r.MovingTo, r.Reason, r.Failures, c.wantNode, c.wantMoving, c.wantReason, c.wantFailures)
			}
			if out.CreateJob != c.wantCreate || out.DeleteJob != c.wantDelete || out.Moved != c.moved {
				t.Errorf("create %v delete %v moved %v; want %v %v %v", out.CreateJob, out.DeleteJob, out.Moved, c.wantCreate, c.wantDelete, c.moved)
			}
			if out.Moved && r.ProviderID != "p://"+r.Node {
				t.Errorf("holder %s with provider ID %q", r.Node, r.ProviderID)
			}
			if c.wantEventWarning != (out.Event != nil && out.Event.Warning) {
				t.Errorf("event %+v", out.Event)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	for f, want := range map[int32]time.Duration{1: 5 * time.Second, 2: 10 * time.Second, 4: 40 * time.Second, 20: 5 * time.Minute} {
		if got := Backoff(f); got != want {
			t.Errorf("Backoff(%d) = %s, want %s", f, got, want)
		}
	}
}
