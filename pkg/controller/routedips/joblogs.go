package routedips

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/pkg/routedip"
)

// The Jobs' pods, in the Job namespace only (a Role: see add.go).
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list,namespace=shardgate

// withPodMessage adds what the failed Job's pod left in its termination log (the class's own
// program saying what the cloud answered) to the Job's failure, read once, uncached, from the
// Job's namespace. Bounded: a condition is no place for a log.
func withPodMessage(ctx context.Context, rd client.Reader, namespace string, o *routedip.JobObservation) {
	if rd == nil || !o.Done || o.Succeeded {
		return
	}
	pods := &corev1.PodList{}
	if err := rd.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels{"batch.kubernetes.io/job-name": o.Name}); err != nil {
		return
	}
	for _, p := range pods.Items {
		for _, s := range p.Status.ContainerStatuses {
			if t := s.State.Terminated; t != nil && t.ExitCode != 0 && t.Message != "" {
				msg := t.Message
				if len(msg) > 300 {
					msg = msg[:300] + "…"
				}
				o.Message += " (container " + s.Name + ": " + msg + ")"
				return
			}
		}
	}
}
