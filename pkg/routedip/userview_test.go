package routedip

import (
	"strings"
	"testing"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// TestUserViewKeepsJobOutputInSeed: a failed Job's message (the cloud's answer, its log tail)
// never reaches the user cluster's status or Events; the seed keeps it.
func TestUserViewKeepsJobOutputInSeed(t *testing.T) {
	const secret = "token=s3cr3t other-customer-instance"
	rec := v1alpha1.RoutedIPRecord{Address: "203.0.113.1", Node: "a", MovingTo: "b", Failures: 2, Reason: v1alpha1.ReasonMoveFailed,
		Message: "2 Jobs in a row failed to assign it to b: " + secret, LastJob: &v1alpha1.RoutedIPJobOutcome{Name: "j", Message: secret}}
	lastJob, msg := UserView(rec)
	if strings.Contains(msg, "s3cr3t") || strings.Contains(lastJob.Message, "s3cr3t") || lastJob.Succeeded || !strings.Contains(msg, "a keeps it") {
		t.Errorf("user view %q, last Job %+v", msg, lastJob)
	}
	out := Advance(MoveInput{Record: v1alpha1.RoutedIPRecord{Address: "203.0.113.1", Node: "a", MovingTo: "b"}, Target: "b",
		Job: &JobObservation{Name: "j", Target: "b", Done: true, Message: secret}})
	if out.Event == nil || strings.Contains(out.Event.UserMessage, "s3cr3t") || !strings.Contains(out.Event.Message, "s3cr3t") {
		t.Errorf("event %+v: want the Job's output in the seed's message only", out.Event)
	}
}
