package profile

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/validation"
)

// Reconciler writes IngressProfile status.
type Reconciler struct {
	Client      client.Client
	DefaultZone string
	Clock       clock.PassiveClock
	// written: when this replica last wrote each profile's status.
	written sync.Map
}

// countInterval is how often a profile's matchingClusters alone is written: a thousand clusters
// created at a start would otherwise write the count a hundred times over. A change of the
// condition is written at once.
const countInterval = 5 * time.Second

// Reconcile validates the profile and counts the clusters it is in force for.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	p := &v1alpha1.IngressProfile{}
	if err := r.Client.Get(ctx, req.NamespacedName, p); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// Read only, to count: no copy of every ClusterIngress out of the cache (at 1,000 clusters
	// created at once this list ran ~400 times, 400,000 deep copies).
	cis := &v1alpha1.ClusterIngressList{}
	if err := r.Client.List(ctx, cis, client.UnsafeDisableDeepCopy); err != nil {
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
	countOnly := before.Status.DeepCopy()
	countOnly.MatchingClusters = p.Status.MatchingClusters
	if last, ok := r.written.Load(p.Name); ok && equality.Semantic.DeepEqual(countOnly, &p.Status) {
		if wait := countInterval - r.Clock.Since(last.(time.Time)); wait > 0 {
			return ctrl.Result{RequeueAfter: wait}, nil
		}
	}
	if err := r.Client.Status().Patch(ctx, p, client.MergeFrom(before), client.FieldOwner(v1alpha1.FieldOwner)); err != nil {
		return ctrl.Result{}, err
	}
	r.written.Store(p.Name, r.Clock.Now())
	return ctrl.Result{}, nil
}
