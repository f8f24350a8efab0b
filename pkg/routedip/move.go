package routedip

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// JobKind names a class's Job.
const (
	KindUpdateRoutedIP = "UpdateRoutedIP"
	KindUpdateFirewall = "UpdateFirewall"
)

// JobObservation is a class Job as the seed's cache shows it.
type JobObservation struct {
	Name string
	// Target is the node an updateRoutedIP Job gives the address to, TargetProviderID its
	// instance.
	Target, TargetProviderID string
	Done                     bool
	Succeeded                bool
	Message                  string
	// Created and Finished: when the Job was created and finished.
	Created, Finished time.Time
}

// MoveInput is everything a move's next step depends on.
type MoveInput struct {
	Record v1alpha1.RoutedIPRecord
	// Target is the elected node ("" when none is eligible) and TargetProviderID its instance.
	Target, TargetProviderID string
	// Why no node is eligible.
	Why string
	// Job is this address' updateRoutedIP Job, if one exists.
	Job *JobObservation
	// FirewallOpen: the class's applied firewall opens the record's ports on the target (always
	// true with firewallPostAllow).
	FirewallOpen bool
	Now          time.Time
}

// MoveOutput is the next record and what to do for it.
type MoveOutput struct {
	Record v1alpha1.RoutedIPRecord
	// CreateJob: start an updateRoutedIP Job for Record.MovingTo.
	CreateJob bool
	// DeleteJob: the observed Job was read and is done with.
	DeleteJob bool
	// Requeue: look again after this long (a backoff running out).
	Requeue time.Duration
	// Event to record, if any (Warning when a Job failed).
	Event *Event
	// Moved: a move completed in MoveDuration.
	Moved        bool
	MoveDuration time.Duration
}

// Event is an Event to record on the ClusterIngress (Message) and the RoutedIP (UserMessage:
// without the Job's output, which stays in the seed).
type Event struct {
	Warning     bool
	Reason      string
	Message     string
	UserMessage string
}

// Backoff before the next Job after failures in a row: 5 s, 10 s, 20 s, … at most 5 min.
func Backoff(failures int32) time.Duration {
	d := 5 * time.Second
	for i := int32(1); i < failures && d < 5*time.Minute; i++ {
		d *= 2
	}
	return min(d, 5*time.Minute)
}

// Advance takes a record one step towards its target, in the seed document's order: the target
// is tainted (by the caller, for every record with MovingTo set), the firewall opened for it
// (unless firewallPostAllow), the address assigned by an updateRoutedIP Job, and the old holder
// untainted (by the caller, once no record names it). A failed Job is an Event and a new Job after
// a backoff; the record keeps the old holder until a Job succeeds, so a failing cloud never
// leaves the address without a node.
func Advance(in MoveInput) MoveOutput {
	rec := in.Record
	out := MoveOutput{}
	if j := in.Job; j != nil {
		// The Job is the truth of the move it makes (the record's last write may have been lost).
		if rec.MovingTo != j.Target {
			rec.MovingSince = nil
		}
		rec.MovingTo, rec.MovingProviderID = j.Target, j.TargetProviderID
		if !j.Done {
			out.Record = phase(rec, v1alpha1.RoutedIPMoving, v1alpha1.ReasonRoutedIPMoving, fmt.Sprintf("Job %s is assigning the address to %s", j.Name, j.Target))
			return out
		}
		out.DeleteJob = true
		finished := metav1.NewTime(j.Finished)
		rec.LastJob = &v1alpha1.RoutedIPJobOutcome{Name: j.Name, Kind: KindUpdateRoutedIP, Succeeded: j.Succeeded, Message: j.Message, FinishedTime: &finished}
		if j.Succeeded {
			from := rec.Node
			rec.Node, rec.ProviderID = j.Target, j.TargetProviderID
			out.Moved, out.MoveDuration = true, in.Now.Sub(j.Created)
			if rec.MovingSince != nil { // the move's start, when its record was kept
				out.MoveDuration = in.Now.Sub(rec.MovingSince.Time)
			}
			rec.MovingTo, rec.MovingProviderID, rec.MovingSince = "", "", nil
			rec.Failures, rec.RetryAfter = 0, nil
			msg := fmt.Sprintf("%s assigned to %s", rec.Address, j.Target)
			if from != "" && from != j.Target {
				msg = fmt.Sprintf("%s moved from %s to %s", rec.Address, from, j.Target)
			}
			out.Event = &Event{Reason: "Moved", Message: msg, UserMessage: msg}
		} else {
			rec.Failures++
			retry := metav1.NewTime(in.Now.Add(Backoff(rec.Failures)))
			rec.RetryAfter = &retry
			failed := fmt.Sprintf("Job %s assigning %s to %s failed (%d in a row; next try after %s)", j.Name, rec.Address, j.Target, rec.Failures, Backoff(rec.Failures))
			out.Event = &Event{Warning: true, Reason: v1alpha1.ReasonMoveFailed, Message: failed + ": " + j.Message, UserMessage: failed}
		}
		// The Job is gone after this step; decide the rest on the next pass, from the new record.
		out.Record = settle(rec, in)
		out.Requeue = time.Millisecond
		return out
	}
	out.Record = settle(rec, in)
	rec = out.Record
	if rec.MovingTo == "" || !in.FirewallOpen {
		return out
	}
	if rec.RetryAfter != nil && in.Now.Before(rec.RetryAfter.Time) {
		out.Requeue = rec.RetryAfter.Sub(in.Now)
		return out
	}
	out.CreateJob = true
	return out
}

// settle sets MovingTo from the election and the phase from where the record stands.
func settle(rec v1alpha1.RoutedIPRecord, in MoveInput) v1alpha1.RoutedIPRecord {
	switch {
	case in.Target == "":
		rec.MovingTo, rec.MovingProviderID, rec.MovingSince = "", "", nil
		return phase(rec, stay(rec), v1alpha1.ReasonNoEligibleNode, in.Why)
	case in.Target == rec.Node:
		rec.MovingTo, rec.MovingProviderID, rec.MovingSince = "", "", nil
		rec.Failures, rec.RetryAfter = 0, nil
		return phase(rec, v1alpha1.RoutedIPAssigned, v1alpha1.ReasonRoutedIPsAssigned, "held by "+rec.Node)
	}
	if rec.MovingTo != in.Target {
		since := metav1.NewTime(in.Now)
		rec.MovingTo, rec.MovingProviderID, rec.MovingSince = in.Target, in.TargetProviderID, &since
		rec.Failures, rec.RetryAfter = 0, nil
	}
	switch {
	case rec.Failures > 0:
		msg := fmt.Sprintf("%d Jobs in a row failed to assign it to %s", rec.Failures, rec.MovingTo)
		if rec.LastJob != nil && !rec.LastJob.Succeeded {
			msg += ": " + rec.LastJob.Message
		}
		if rec.Node != "" {
			msg += "; " + rec.Node + " keeps it"
		}
		return phase(rec, v1alpha1.RoutedIPMoving, v1alpha1.ReasonMoveFailed, msg)
	case !in.FirewallOpen:
		return phase(rec, v1alpha1.RoutedIPMoving, v1alpha1.ReasonRoutedIPMoving, "waiting for the firewall to open its ports on "+rec.MovingTo)
	}
	return phase(rec, v1alpha1.RoutedIPMoving, v1alpha1.ReasonRoutedIPMoving, "assigning it to "+rec.MovingTo)
}

func stay(rec v1alpha1.RoutedIPRecord) v1alpha1.RoutedIPPhase {
	if rec.Node != "" {
		return v1alpha1.RoutedIPAssigned
	}
	return v1alpha1.RoutedIPPending
}

func phase(rec v1alpha1.RoutedIPRecord, p v1alpha1.RoutedIPPhase, reason, msg string) v1alpha1.RoutedIPRecord {
	rec.Phase, rec.Reason, rec.Message = p, reason, msg
	return rec
}
