package routedips

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/routedip"
)

// FirewallReconciler keeps one class's cloud firewall equal to the map of every cluster's
// records of the class, one updateFirewall Job at a time.
type FirewallReconciler struct {
	Client       client.Client
	APIReader    client.Reader
	JobNamespace string
	Clock        clock.PassiveClock
	Recorder     events.EventRecorder
}

// Reconcile reads the last Job's outcome (success: the map it carried is the applied one;
// failure: an Event and a backoff), then starts a Job for the desired map if it differs from the
// applied one. A read Job is deleted only after the status recorded it.
func (f *FirewallReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	class := &v1alpha1.ClusterRoutedIPClass{}
	if err := f.Client.Get(ctx, req.NamespacedName, class); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := class.Status.DeepCopy()
	now := f.Clock.Now()
	jobs := &batchv1.JobList{}
	if err := f.Client.List(ctx, jobs, client.InNamespace(f.JobNamespace),
		client.MatchingLabels{routedip.JobKindLabel: "firewall", routedip.JobClassLabel: class.Name}); err != nil {
		return ctrl.Result{}, err
	}
	var read []*batchv1.Job // done and recorded: deleted once the status says so
	for i := range jobs.Items {
		j := &jobs.Items[i]
		if j.DeletionTimestamp != nil {
			continue
		}
		o := routedip.Observe(j)
		if !o.Done {
			setFirewall(class, metav1.ConditionFalse, v1alpha1.ReasonFirewallUpdating, "Job "+j.Name+" is applying the map")
			return ctrl.Result{}, f.patch(ctx, class, before)
		}
		if class.Status.LastJob == nil || class.Status.LastJob.Name != j.Name { // not read before
			withPodMessage(ctx, f.APIReader, f.JobNamespace, &o)
			finished := metav1.NewTime(o.Finished)
			class.Status.LastJob = &v1alpha1.RoutedIPJobOutcome{Name: j.Name, Kind: routedip.KindUpdateFirewall, Succeeded: o.Succeeded, Message: o.Message, FinishedTime: &finished}
			if o.Succeeded {
				rules, err := rulesOf(j)
				if err != nil {
					return ctrl.Result{}, err
				}
				class.Status.Firewall, class.Status.FirewallHash = rules, j.Annotations[routedip.JobFirewallHashAnnotation]
				class.Status.Failures, class.Status.RetryAfter = 0, nil
			} else {
				class.Status.Failures++
				retry := metav1.NewTime(now.Add(routedip.Backoff(class.Status.Failures)))
				class.Status.RetryAfter = &retry
				firewallFailures.WithLabelValues(class.Name).Inc()
				f.Recorder.Eventf(class, nil, "Warning", v1alpha1.ReasonFirewallFailed, "UpdateFirewall", "Job %s failed (%d in a row; next try after %s): %s",
					j.Name, class.Status.Failures, routedip.Backoff(class.Status.Failures), o.Message)
			}
		}
		read = append(read, j)
	}
	all := &v1alpha1.ClusterIngressList{}
	if err := f.Client.List(ctx, all); err != nil {
		return ctrl.Result{}, err
	}
	c := routedip.ClassOf(class)
	var records []v1alpha1.RoutedIPRecord
	var left []string // what was left out of the map, per cluster (seed-side only)
	for _, ci := range all.Items {
		var instances *routedip.Instances // compiled for clusters with a record of this class only
		for _, r := range ci.Status.RoutedIPs {
			if r.ClassName != class.Name {
				continue
			}
			if instances == nil {
				in := routedip.InstancesOf(c.ProviderIDPattern, ci.Status.ClusterID)
				instances = &in
			}
			r, dropped := routedip.Trusted(r, *instances, c)
			if dropped != "" {
				left = append(left, fmt.Sprintf("%s/%s %s: %s", ci.Namespace, ci.Name, r.Address, dropped))
			}
			records = append(records, r)
		}
	}
	desired := routedip.DesiredFirewall(records, class.Spec.FirewallPostAllow)
	var requeue time.Duration
	switch {
	case c.Invalid != "":
		// Frozen, as the records are: an unusable class neither opens nor closes anything.
		setFirewall(class, metav1.ConditionFalse, v1alpha1.ReasonClassInvalid, "the class is unusable, the firewall is left as it is: "+c.Invalid)
	case routedip.FirewallHash(desired) == class.Status.FirewallHash:
		setFirewall(class, metav1.ConditionTrue, v1alpha1.ReasonFirewallApplied, fmt.Sprintf("%d rules", len(desired))+leftOut(left))
	case class.Status.RetryAfter != nil && now.Before(class.Status.RetryAfter.Time):
		requeue = class.Status.RetryAfter.Sub(now)
		msg := "waiting to retry"
		if class.Status.LastJob != nil {
			msg = fmt.Sprintf("%d updateFirewall Jobs in a row failed, the last: %s", class.Status.Failures, class.Status.LastJob.Message)
		}
		setFirewall(class, metav1.ConditionFalse, v1alpha1.ReasonFirewallFailed, msg)
	default:
		j := routedip.FirewallJob(class, f.JobNamespace, desired, class.Status.Failures)
		if err := f.Client.Create(ctx, j); err != nil && !apierrors.IsAlreadyExists(err) {
			return ctrl.Result{}, err
		}
		setFirewall(class, metav1.ConditionFalse, v1alpha1.ReasonFirewallUpdating, "Job "+j.Name+" is applying the map"+leftOut(left))
	}
	if err := f.patch(ctx, class, before); err != nil {
		return ctrl.Result{}, err
	}
	for _, j := range read {
		if err := f.Client.Delete(ctx, j, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// leftOut says which records' instances or ports the map left out (at most a few, then a count:
// a condition is no place for a list every cluster can grow).
func leftOut(left []string) string {
	if len(left) == 0 {
		return ""
	}
	const shown = 3
	msg := "; left out (not the cluster's instance, or ports beyond the class's bounds): " + strings.Join(left[:min(len(left), shown)], "; ")
	if len(left) > shown {
		msg += fmt.Sprintf("; and %d more", len(left)-shown)
	}
	return msg
}

// rulesOf reads the map a firewall Job carried (the environment Shardgate gave it).
func rulesOf(j *batchv1.Job) ([]v1alpha1.FirewallRule, error) {
	for _, c := range j.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == v1alpha1.EnvFirewallRules {
				var rules []v1alpha1.FirewallRule
				if err := json.Unmarshal([]byte(e.Value), &rules); err != nil {
					return nil, fmt.Errorf("firewall Job %s: %w", j.Name, err)
				}
				return rules, nil
			}
		}
	}
	return nil, fmt.Errorf("firewall Job %s carries no %s", j.Name, v1alpha1.EnvFirewallRules)
}

func setFirewall(c *v1alpha1.ClusterRoutedIPClass, s metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionFirewallApplied, Status: s, Reason: reason, Message: msg, ObservedGeneration: c.Generation})
}

func (f *FirewallReconciler) patch(ctx context.Context, c *v1alpha1.ClusterRoutedIPClass, before *v1alpha1.ClusterRoutedIPClassStatus) error {
	if equality.Semantic.DeepEqual(before, &c.Status) {
		return nil
	}
	old := c.DeepCopy()
	old.Status = *before
	return f.Client.Status().Patch(ctx, c, client.MergeFromWithOptions(old, client.MergeFromWithOptimisticLock{}), client.FieldOwner(v1alpha1.FieldOwner))
}
