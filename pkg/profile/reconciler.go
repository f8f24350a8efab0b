// Package profile reports on IngressProfiles: whether their settings are usable (Valid, with
// every problem named by field) and how many clusters they are in force for.
package profile

import (
	"context"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/dnsname"
	"github.com/shardgate/shardgate/pkg/ingress"
	"github.com/shardgate/shardgate/pkg/usercluster"
)

// Reconciler writes IngressProfile status.
type Reconciler struct {
	Client      client.Client
	DefaultZone string
}

// +kubebuilder:rbac:groups=shardgate.io,resources=ingressprofiles/status,verbs=get;update;patch

// Add registers the profile status controller.
func Add(mgr ctrl.Manager, defaultZone string) error {
	return ctrl.NewControllerManagedBy(mgr).Named("profile").
		For(&v1alpha1.IngressProfile{}).
		Watches(&v1alpha1.ClusterIngress{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.(*v1alpha1.ClusterIngress).Spec.Profile}}}
		})).
		Complete(&Reconciler{Client: mgr.GetClient(), DefaultZone: defaultZone})
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
	if errs := Validate(p, r.DefaultZone); len(errs) > 0 {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, reasonFor(errs), errs.ToAggregate().Error()
	} else {
		p.Status.ObservedGeneration = p.Generation
	}
	meta.SetStatusCondition(&p.Status.Conditions, cond)
	if equality.Semantic.DeepEqual(before.Status, p.Status) {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, r.Client.Status().Patch(ctx, p, client.MergeFrom(before), client.FieldOwner(v1alpha1.FieldOwner))
}

// Validate returns every problem of a profile: selectors, the zone (with the controller's
// default applied), and the shards.
func Validate(p *v1alpha1.IngressProfile, defaultZone string) field.ErrorList {
	errs := usercluster.ValidateProfile(p)
	zone := p.Spec.DNS.Zone
	if zone == "" {
		zone = defaultZone
	}
	if _, err := dnsname.NormalizeZone(zone); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("spec", "dns", "zone"), p.Spec.DNS.Zone, err.Error()))
	}
	return append(errs, ingress.ValidateShards(v1alpha1.ResolveShards(p.Spec.Shards), field.NewPath("spec", "shards"))...)
}

// reasonFor picks the condition reason for the first problem's field.
func reasonFor(errs field.ErrorList) string {
	f := errs[0].Field
	switch {
	case strings.HasPrefix(f, "spec.dns.zone"):
		return v1alpha1.ReasonInvalidZone
	case strings.HasPrefix(f, "spec.shards"):
		return v1alpha1.ReasonShardsInvalid
	case strings.HasPrefix(f, "spec.clusterSelector"):
		return v1alpha1.ReasonClusterSelectorBad
	case strings.HasPrefix(f, "spec.dns.ingressNodeSelector"):
		return v1alpha1.ReasonIngressNodeSelectorBad
	}
	return v1alpha1.ReasonProfileInvalid
}
