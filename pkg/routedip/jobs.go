package routedip

import (
	"crypto/sha256"
	"fmt"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// Labels and annotations of the class Jobs in the seed.
const (
	// JobKindLabel is assign or firewall.
	JobKindLabel = "shardgate.io/routed-ip-job"
	// JobClassLabel is the class the Job belongs to.
	JobClassLabel = "shardgate.io/routed-ip-class"
	// JobClusterLabel is a hash of the ClusterIngress key (namespace/name may exceed a label).
	JobClusterLabel = "shardgate.io/routed-ip-cluster"
	// JobAddressLabel is the address an assign Job moves.
	JobAddressLabel = "shardgate.io/routed-ip-address"
	// JobTargetAnnotation is the node an assign Job gives the address to, and
	// JobTargetProviderIDAnnotation its instance: a Job says what it does, so a record whose last
	// write was lost (a conflict) is rebuilt from the Job.
	JobTargetAnnotation           = "shardgate.io/routed-ip-target"
	JobTargetProviderIDAnnotation = "shardgate.io/routed-ip-target-provider-id"
	// JobFirewallHashAnnotation is the hash of the map a firewall Job applies.
	JobFirewallHashAnnotation = "shardgate.io/firewall-hash"

	jobAssign   = "assign"
	jobFirewall = "firewall"
)

// ClusterHash is the JobClusterLabel value of a ClusterIngress.
func ClusterHash(namespace, name string) string {
	return fmt.Sprintf("%x", sha256.Sum256([]byte(namespace+"/"+name)))[:20]
}

// AssignJobInput names one updateRoutedIP Job.
type AssignJobInput struct {
	Class                  *v1alpha1.ClusterRoutedIPClass
	Namespace              string
	ClusterNamespace       string
	ClusterName, ClusterID string
	Record                 v1alpha1.RoutedIPRecord
}

// AssignJob renders the updateRoutedIP Job giving in.Record's address to its MovingTo node. Its
// name is fixed by the move (cluster, address, target, start of the move, failures so far), so a
// controller that restarts finds the Job it created instead of starting another.
func AssignJob(in AssignJobInput) *batchv1.Job {
	r := in.Record
	since := ""
	if r.MovingSince != nil {
		since = r.MovingSince.UTC().Format("20060102T150405.000")
	}
	name := jobName("rip-assign", in.ClusterNamespace, in.ClusterName, r.Address, r.MovingTo, since, fmt.Sprint(r.Failures))
	j := job(in.Class, in.Namespace, name, jobAssign, in.Class.Spec.UpdateRoutedIP, []corev1.EnvVar{
		{Name: v1alpha1.EnvRoutedIP, Value: r.Address},
		{Name: v1alpha1.EnvNodeName, Value: r.MovingTo},
		{Name: v1alpha1.EnvNodeProviderID, Value: r.MovingProviderID},
		{Name: v1alpha1.EnvClusterID, Value: in.ClusterID},
	})
	j.Labels[JobClusterLabel] = ClusterHash(in.ClusterNamespace, in.ClusterName)
	j.Labels[JobAddressLabel] = r.Address
	j.Annotations[JobTargetAnnotation] = r.MovingTo
	j.Annotations[JobTargetProviderIDAnnotation] = r.MovingProviderID
	return j
}

// FirewallJob renders the updateFirewall Job applying rules (named by the map and the class's
// failures, like AssignJob).
func FirewallJob(class *v1alpha1.ClusterRoutedIPClass, namespace string, rules []v1alpha1.FirewallRule, failures int32) *batchv1.Job {
	hash := FirewallHash(rules)
	j := job(class, namespace, jobName("rip-firewall", class.Name, hash, fmt.Sprint(failures)), jobFirewall, class.Spec.UpdateFirewall,
		[]corev1.EnvVar{{Name: v1alpha1.EnvFirewallRules, Value: FirewallJSON(rules)}})
	j.Annotations[JobFirewallHashAnnotation] = hash
	return j
}

func jobName(prefix string, parts ...string) string {
	return fmt.Sprintf("%s-%x", prefix, sha256.Sum256([]byte(strings.Join(parts, "\x00"))))[:len(prefix)+17]
}

// job is the class's Job spec with Shardgate's inputs: every container gets env (Shardgate's
// values win over the class's own of the same name) and the class's Secrets as envFrom. Unset,
// a Job runs one pod (backoffLimit 0: Shardgate retries with its own backoff and an Event per
// failure), never restarts it in place, gives up after 5 minutes and is cleaned up an hour after
// it finished should Shardgate not delete it first.
func job(class *v1alpha1.ClusterRoutedIPClass, namespace, name, kind string, spec batchv1.JobSpec, env []corev1.EnvVar) *batchv1.Job {
	spec = *spec.DeepCopy()
	if spec.BackoffLimit == nil {
		spec.BackoffLimit = ptr.To[int32](0)
	}
	if spec.ActiveDeadlineSeconds == nil {
		spec.ActiveDeadlineSeconds = ptr.To[int64](300)
	}
	if spec.TTLSecondsAfterFinished == nil {
		spec.TTLSecondsAfterFinished = ptr.To[int32](3600)
	}
	// The Job controller chooses selector and pod labels.
	spec.Selector, spec.ManualSelector = nil, nil
	pod := &spec.Template.Spec
	if pod.RestartPolicy == "" || pod.RestartPolicy == corev1.RestartPolicyAlways {
		pod.RestartPolicy = corev1.RestartPolicyNever
	}
	var from []corev1.EnvFromSource
	for _, s := range class.Spec.FromSecretsRef {
		from = append(from, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: s}})
	}
	withInputs := func(cs []corev1.Container) {
		for i := range cs {
			c := &cs[i]
			var kept []corev1.EnvVar
			for _, e := range c.Env {
				if !strings.HasPrefix(e.Name, "SHARDGATE_") {
					kept = append(kept, e)
				}
			}
			c.Env = append(kept, env...)
			c.EnvFrom = append(c.EnvFrom, from...)
		}
	}
	withInputs(pod.InitContainers)
	withInputs(pod.Containers)
	labels := map[string]string{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue, JobKindLabel: kind, JobClassLabel: class.Name}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: namespace, Labels: labels, Annotations: map[string]string{},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ClusterRoutedIPClass",
				Name: class.Name, UID: class.UID, Controller: ptr.To(true)}},
		},
		Spec: spec,
	}
}

// Observe reads a Job's outcome (Complete or Failed, with the failure's reason and message).
func Observe(j *batchv1.Job) JobObservation {
	o := JobObservation{Name: j.Name, Target: j.Annotations[JobTargetAnnotation], TargetProviderID: j.Annotations[JobTargetProviderIDAnnotation],
		Created: j.CreationTimestamp.Time}
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			o.Done, o.Succeeded, o.Message, o.Finished = true, true, "completed", c.LastTransitionTime.Time
		case batchv1.JobFailed:
			o.Done, o.Succeeded, o.Message, o.Finished = true, false, strings.TrimSpace(c.Reason+": "+c.Message), c.LastTransitionTime.Time
		}
	}
	return o
}
