package routedip

import (
	"fmt"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// Fixed outcomes of a class Job as the user cluster sees them.
const (
	userJobSucceeded = "completed"
	userJobFailed    = "failed (the cloud's answer is in the seed: the ClusterIngress's events and status)"
)

// UserView is what a user cluster's RoutedIP status shows of a record: holder, phase, reason and
// fixed messages. A class Job's output (its failure message and log tail: the cloud's answer,
// which may name other customers' resources or print a credential) stays in the seed.
func UserView(rec v1alpha1.RoutedIPRecord) (lastJob *v1alpha1.RoutedIPJobOutcome, message string) {
	if j := rec.LastJob; j != nil {
		lastJob = &v1alpha1.RoutedIPJobOutcome{Name: j.Name, Kind: j.Kind, Succeeded: j.Succeeded, Message: userJobSucceeded, FinishedTime: j.FinishedTime}
		if !j.Succeeded {
			lastJob.Message = userJobFailed
		}
	}
	message = rec.Message
	if rec.Reason == v1alpha1.ReasonMoveFailed {
		message = fmt.Sprintf("%d Jobs in a row failed to assign it to %s; the cloud's answer is in the seed", rec.Failures, rec.MovingTo)
		if rec.Node != "" {
			message += "; " + rec.Node + " keeps it"
		}
	}
	return lastJob, message
}
