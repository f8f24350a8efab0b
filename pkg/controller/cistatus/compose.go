package cistatus

import (
	"encoding/json"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// Compose is the status to write: base (what the object has) with every posted part in place of
// its owner's fields and conditions, and Ready computed from the result (at generation). An
// owner that has not posted keeps what base has. Conditions come in the owners' order, then any
// condition no owner declares (kept as it is), then Ready. The result is normalized as the API
// server stores it (times in whole seconds), so it compares equal to what is read back.
func Compose(base *v1alpha1.ClusterIngressStatus, parts map[Owner]*v1alpha1.ClusterIngressStatus, generation int64,
	now time.Time) v1alpha1.ClusterIngressStatus {
	out := compose(base, parts, generation, now)
	normalize(&out)
	return out
}

// compose is Compose without the normalization (Overlay's: what a controller reads is never
// compared with what is stored).
func compose(base *v1alpha1.ClusterIngressStatus, parts map[Owner]*v1alpha1.ClusterIngressStatus, generation int64,
	now time.Time) v1alpha1.ClusterIngressStatus {
	out := base.DeepCopy()
	var conds []metav1.Condition
	for _, o := range order {
		from := base
		if p, ok := parts[o]; ok {
			from = p
			if f := owned[o].fields; f != nil {
				f(out, p.DeepCopy())
			}
		}
		for _, c := range from.Conditions {
			if conditionOwner[c.Type] == o {
				conds = append(conds, c)
			}
		}
	}
	for _, c := range base.Conditions {
		if _, declared := conditionOwner[c.Type]; !declared && c.Type != v1alpha1.ConditionReady {
			conds = append(conds, c)
		}
	}
	ready := Ready(conds)
	ready.ObservedGeneration = generation
	ready.LastTransitionTime = metav1.NewTime(now)
	if prev := meta.FindStatusCondition(base.Conditions, v1alpha1.ConditionReady); prev != nil && prev.Status == ready.Status {
		ready.LastTransitionTime = prev.LastTransitionTime
	}
	out.Conditions = append(slices.Clone(conds), ready)
	return *out
}

// normalize makes s what the API server stores: JSON times have whole seconds.
func normalize(s *v1alpha1.ClusterIngressStatus) {
	b, err := json.Marshal(s)
	if err != nil {
		return // a status always marshals; left as it is otherwise
	}
	var n v1alpha1.ClusterIngressStatus
	if json.Unmarshal(b, &n) == nil {
		*s = n
	}
}
