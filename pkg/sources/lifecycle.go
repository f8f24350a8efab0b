package sources

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// LifecycleInput is everything the ClusterIngress lifecycle decides from.
type LifecycleInput struct {
	// Source is the cluster source under the ClusterIngress' key; nil when there is none.
	Source *Source
	// SourceKnown is false when whether a source exists cannot be known now (the seed's Cluster
	// API could not be discovered yet): nothing is removed on a guess.
	SourceKnown bool
	// Current is the ClusterIngress; nil when there is none.
	Current *v1alpha1.ClusterIngress
	// Profiles are all IngressProfiles; Invalid names those that fail validation.
	Profiles []v1alpha1.IngressProfile
	Invalid  map[string]bool
	// DefaultZone is the controller's --dns-zone.
	DefaultZone string
	Now         time.Time
	// Grace is how long a ClusterIngress (and so its records and user-cluster objects) outlives
	// its source, so that a source deleted and recreated (how GitOps tools rotate a Secret)
	// adopts them instead of starting over.
	Grace time.Duration
}

// LifecycleAction is what to do with the ClusterIngress.
type LifecycleAction int

// Lifecycle actions.
const (
	// LifecycleKeep: write nothing.
	LifecycleKeep LifecycleAction = iota
	// LifecycleApply: create or update the ClusterIngress with Spec (SourceAvailable=True).
	LifecycleApply
	// LifecycleMarkMissing: record that the source is gone (SourceAvailable=False); the grace
	// period runs from then.
	LifecycleMarkMissing
	// LifecycleDelete: remove the ClusterIngress, for the deliberate cause in Why.
	LifecycleDelete
)

// LifecycleDecision is the outcome of DecideLifecycle.
type LifecycleDecision struct {
	Action LifecycleAction
	Spec   v1alpha1.ClusterIngressSpec
	Why    string
	// BestEffortCleanup (with LifecycleDelete): the cluster itself is going away or unknown, so
	// the user-cluster cleanup must not wait for a cluster that may never answer again.
	BestEffortCleanup bool
	// RequeueAfter asks to decide again then (the grace period's end).
	RequeueAfter time.Duration
}

// DecideLifecycle decides whether a user cluster has a ClusterIngress and with which settings.
// Records are removed only for a deliberate cause: the cluster is being deleted, no valid
// profile selects it, or its source has been gone for the whole grace period. An invalid profile
// changes nothing: the clusters it is in force for keep their last good settings, and it takes
// no cluster.
func DecideLifecycle(in LifecycleInput) LifecycleDecision {
	ci := in.Current
	if ci != nil && ci.DeletionTimestamp != nil {
		return LifecycleDecision{Why: "being deleted"} // recreated once it is gone
	}
	if in.Source == nil {
		if ci == nil || !in.SourceKnown {
			return LifecycleDecision{Why: "no source, or it cannot be known now"}
		}
		return missingSource(in, ci)
	}
	src := in.Source
	if ci != nil && ci.Spec.ClusterRef.Kind != src.Kind {
		return LifecycleDecision{Why: fmt.Sprintf("the name is taken by a %s source; a Cluster and a kubeconfig Secret of one name are one cluster too many", ci.Spec.ClusterRef.Kind)}
	}
	if src.Deleting && ci == nil {
		return LifecycleDecision{Why: "the cluster source is being deleted and its ClusterIngress is gone"}
	}
	if src.Deleting {
		return LifecycleDecision{Action: LifecycleDelete, BestEffortCleanup: true, Why: "the cluster source is being deleted"}
	}
	if src.Paused {
		return LifecycleDecision{Why: "the cluster source is paused: nothing is created, changed or removed until it is not"}
	}
	if ci != nil && in.Invalid[ci.Spec.Profile] && profileExists(in.Profiles, ci.Spec.Profile) {
		// Frozen on the last good settings until the profile is fixed; the source is here.
		return LifecycleDecision{Action: LifecycleApply, Spec: withSource(*ci.Spec.DeepCopy(), src), Why: "profile invalid: last good settings kept"}
	}
	p := SelectProfile(in.Profiles, in.Invalid, src.Labels)
	if p == nil {
		if ci == nil {
			return LifecycleDecision{Why: "no valid IngressProfile selects the cluster"}
		}
		return LifecycleDecision{Action: LifecycleDelete, Why: "no valid IngressProfile selects the cluster any more"}
	}
	spec := v1alpha1.ClusterIngressSpec{
		Profile:      p.Name,
		DNS:          v1alpha1.ResolveDNS(p.Spec.DNS, in.DefaultZone),
		Shards:       v1alpha1.ResolveShards(p.Spec.Shards),
		Allocation:   v1alpha1.ResolveAllocation(p.Spec.Allocation),
		IngressClass: v1alpha1.ResolveIngressClass(p.Spec.IngressClass),
		TLS:          v1alpha1.ResolveTLS(p.Spec.TLS),
		Claims:       v1alpha1.ResolveClaims(p.Spec.Claims),
		Canary:       p.Spec.Canary,
		VIP:          *p.Spec.VIP.DeepCopy(),
		GatewayAPI:   v1alpha1.ResolveGatewayAPI(p.Spec.GatewayAPI),
	}
	return LifecycleDecision{Action: LifecycleApply, Spec: withSource(spec, src)}
}

func withSource(spec v1alpha1.ClusterIngressSpec, src *Source) v1alpha1.ClusterIngressSpec {
	spec.ClusterRef = v1alpha1.ClusterReference{Kind: src.Kind, Name: src.Name}
	spec.ClusterID = src.ClusterID
	return spec
}

func missingSource(in LifecycleInput, ci *v1alpha1.ClusterIngress) LifecycleDecision {
	c := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionSourceAvailable)
	if c == nil || c.Status != metav1.ConditionFalse {
		return LifecycleDecision{Action: LifecycleMarkMissing, RequeueAfter: in.Grace,
			Why: fmt.Sprintf("the cluster source is gone; its records and objects are kept for %s in case it comes back", in.Grace)}
	}
	left := c.LastTransitionTime.Add(in.Grace).Sub(in.Now)
	if left <= 0 {
		return LifecycleDecision{Action: LifecycleDelete, BestEffortCleanup: true, Why: fmt.Sprintf("the cluster source has been gone for %s", in.Grace)}
	}
	return LifecycleDecision{RequeueAfter: left, Why: "waiting for the source to come back"}
}

func profileExists(profiles []v1alpha1.IngressProfile, name string) bool {
	for _, p := range profiles {
		if p.Name == name && p.DeletionTimestamp == nil {
			return true
		}
	}
	return false
}
