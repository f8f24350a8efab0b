// Package profile is the profile status controller: whether each IngressProfile's settings are
// usable (Valid, with every problem named by field) and how many clusters it is in force for.
package profile

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/controller/kit"
)

// +kubebuilder:rbac:groups=shardgate.io,resources=ingressprofiles/status,verbs=get;update;patch

// Config wires the profile status controller.
type Config struct {
	Kit kit.Config
	// DefaultZone is the zone of profiles that name none (--dns-zone).
	DefaultZone string
}

// Add registers the profile status controller. A profile is one key, served by one replica;
// when owners change, its new owner starts on it at the next change of a profile or cluster.
func Add(mgr ctrl.Manager, cfg Config) error {
	return kit.New(mgr, "profile", cfg.Kit).
		For(&v1alpha1.IngressProfile{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// A ClusterIngress counts for a profile: only its creation, deletion and profile matter.
		Watches(&v1alpha1.ClusterIngress{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.(*v1alpha1.ClusterIngress).Spec.Profile}}}
		}), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(&Reconciler{Client: mgr.GetClient(), DefaultZone: cfg.DefaultZone, Clock: clock.RealClock{}})
}
