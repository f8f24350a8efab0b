package profile

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/validation"
)

// Reconciler writes IngressProfile status.
type Reconciler struct {
	Client      client.Client
	DefaultZone string
}

// Reconcile validates the profile and counts the clusters it is in force for.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	p := &v1alpha1.IngressProfile{}
	if err := r.Client.Get(ctx, req.NamespacedName, p); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	cis := &v1alpha1.ClusterIngressList{}
	if err := r.Client.List(ctx, cis); err != nil {
		return ctrl.Result{}, err
	}
	before := p.DeepCopy()
	p.Status.MatchingClusters = 0
	for _, ci := range cis.Items {
		if ci.Spec.Profile == p.Name {
			p.Status.MatchingClusters++
		}
	}
	cond := metav1.Condition{Type: v1alpha1.ConditionValid, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonValid,
		Message: "settings are usable", ObservedGeneration: p.Generation}
	if errs := validation.Profile(p, r.DefaultZone); len(errs) > 0 {
		cond.Status, cond.Reason = metav1.ConditionFalse, validation.Reason(errs)
		cond.Message = "changes nothing until fixed: the clusters it is in force for keep their last good settings, and it takes no new cluster: " +
			errs.ToAggregate().Error()
	} else {
		p.Status.ObservedGeneration = p.Generation
	}
	meta.SetStatusCondition(&p.Status.Conditions, cond)
	if equality.Semantic.DeepEqual(before.Status, p.Status) {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, r.Client.Status().Patch(ctx, p, client.MergeFrom(before), client.FieldOwner(v1alpha1.FieldOwner))
}
