package lifecycle

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/sources"
	"github.com/shardgate/shardgate/pkg/validation"
)

// Reconciler keeps one ClusterIngress per user cluster that an IngressProfile
// selects: created with the source's namespace and name, spec resolved from the profile
// (DecideLifecycle), removed only for a deliberate cause (the DNS controller's finalizer then
// removes the records, the shard controller's the user-cluster objects).
//
// A ClusterIngress is not owner-referenced to its source: the garbage collector would delete it
// the moment a kubeconfig Secret is deleted, and records would go with it even when the Secret
// is recreated a second later. Removal after the grace period is this reconciler's decision.
type Reconciler struct {
	Client client.Client
	// DefaultZone is the controller's --dns-zone.
	DefaultZone string
	// Sources are the cluster source providers, in lookup order.
	Sources sources.Registry
	// RemovalGrace: see LifecycleInput.Grace.
	RemovalGrace time.Duration
	Clock        clock.PassiveClock
	// Board takes SourceAvailable (cistatus.Lifecycle).
	Board *cistatus.Board
}

// Reconcile handles the source named by req (whatever its kind, same key as its ClusterIngress):
// gather, decide, apply.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ci := &v1alpha1.ClusterIngress{}
	if err := r.Client.Get(ctx, req.NamespacedName, ci); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		ci = nil
	} else {
		r.Board.Overlay(ci)
	}
	src, known, err := r.source(ctx, req.NamespacedName, ci)
	if err != nil {
		return ctrl.Result{}, err
	}
	profiles := &v1alpha1.IngressProfileList{}
	if err := r.Client.List(ctx, profiles); err != nil {
		return ctrl.Result{}, err
	}
	invalid := map[string]bool{}
	for i := range profiles.Items {
		if errs := validation.Profile(&profiles.Items[i], r.DefaultZone); len(errs) > 0 {
			invalid[profiles.Items[i].Name] = true
		}
	}
	d := sources.DecideLifecycle(sources.LifecycleInput{Source: src, SourceKnown: known, Current: ci, Profiles: profiles.Items,
		Invalid: invalid, DefaultZone: r.DefaultZone, Now: r.Clock.Now(), Grace: r.RemovalGrace})
	switch d.Action {
	case sources.LifecycleApply:
		err = r.apply(ctx, req.NamespacedName, ci, d.Spec, src.IgnoredVIPAnnotations)
	case sources.LifecycleMarkMissing:
		log.FromContext(ctx).Info("cluster source missing; keeping the cluster for the grace period", "grace", r.RemovalGrace)
		err = r.setSourceCondition(ctx, ci, metav1.ConditionFalse, v1alpha1.ReasonSourceMissing,
			fmt.Sprintf("the %s is gone; the cluster's records and objects are removed at %s unless it comes back",
				r.describe(ci.Spec.ClusterRef.Kind), r.Clock.Now().Add(r.RemovalGrace).UTC().Format(time.RFC3339)))
	case sources.LifecycleDelete:
		log.FromContext(ctx).Info("deleting ClusterIngress", "reason", d.Why)
		if d.BestEffortCleanup && ci.Annotations[v1alpha1.CleanupAnnotation] != v1alpha1.CleanupBestEffort {
			patch := client.MergeFrom(ci.DeepCopy())
			metav1.SetMetaDataAnnotation(&ci.ObjectMeta, v1alpha1.CleanupAnnotation, v1alpha1.CleanupBestEffort)
			if err = r.Client.Patch(ctx, ci, patch); err != nil {
				return ctrl.Result{}, err
			}
		}
		if err = r.Client.Delete(ctx, ci); apierrors.IsNotFound(err) {
			err = nil
		}
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: d.RequeueAfter}, nil
}

// source finds the user cluster named key: in each provider whose API the seed serves, in
// registry order. known is false when the ClusterIngress' source might exist but cannot be read,
// its provider's API not having been found (yet), or no provider of its kind being registered.
func (r *Reconciler) source(ctx context.Context, key types.NamespacedName, ci *v1alpha1.ClusterIngress) (*sources.Source, bool, error) {
	for _, p := range r.Sources {
		if !sources.Available(p) {
			continue
		}
		src, found, err := p.Get(ctx, r.Client, key)
		if err != nil {
			return nil, false, err // never read as "gone"
		}
		if found {
			return &src, true, nil
		}
	}
	if ci == nil {
		return nil, true, nil
	}
	p := r.Sources.For(ci.Spec.ClusterRef.Kind)
	return nil, p != nil && sources.Available(p), nil
}

// apply creates or updates the ClusterIngress with spec and marks its source present, naming the
// VIP annotations it carries that are not read (their users learn where pools are set now).
func (r *Reconciler) apply(ctx context.Context, key types.NamespacedName, ci *v1alpha1.ClusterIngress, spec v1alpha1.ClusterIngressSpec, ignored []string) error {
	if ci == nil {
		ci = &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	}
	op, err := controllerutil.CreateOrPatch(ctx, r.Client, ci, func() error {
		if ci.CreationTimestamp.IsZero() {
			// Created with the cleanup finalizers of the controllers that always run (they add
			// them themselves to a ClusterIngress made without): three seed writes per cluster
			// fewer when a thousand clusters are published at once.
			for _, f := range []string{v1alpha1.DNSCleanupFinalizer, v1alpha1.AllocationCleanupFinalizer, v1alpha1.UserClusterCleanupFinalizer} {
				controllerutil.AddFinalizer(ci, f)
			}
		}
		ci.Spec = spec
		// Earlier versions owner-referenced the source (and labelled by its name, which fails
		// for names over 63 characters): drop both.
		ci.OwnerReferences = withoutSourceRefs(ci.OwnerReferences)
		delete(ci.Labels, legacyClusterIngressLabel)
		return nil
	})
	if err != nil {
		return fmt.Errorf("apply ClusterIngress: %w", err)
	}
	if op != controllerutil.OperationResultNone {
		log.FromContext(ctx).Info("ClusterIngress "+string(op), "profile", spec.Profile, "clusterID", spec.ClusterID)
	}
	msg := "the " + r.describe(spec.ClusterRef.Kind) + " exists"
	if len(ignored) > 0 {
		msg += "; its annotations " + strings.Join(ignored, ", ") + " are not read: VIP pools, L2 domains and " +
			"router IDs are set by the operator in the IngressProfile (spec.vip)"
	}
	return r.setSourceCondition(ctx, ci, metav1.ConditionTrue, v1alpha1.ReasonSourcePresent, msg)
}

// legacyClusterIngressLabel was set by earlier versions on ClusterIngresses and DNSEndpoints.
const legacyClusterIngressLabel = "shardgate.io/cluster-ingress"

// withoutSourceRefs drops the owner references earlier versions set: only Cluster API Clusters
// and kubeconfig Secrets were sources then, and no provider added since sets one.
func withoutSourceRefs(refs []metav1.OwnerReference) []metav1.OwnerReference {
	var out []metav1.OwnerReference
	for _, r := range refs {
		if (r.Kind == "Cluster" && r.APIVersion == clusterv1.GroupVersion.String()) || (r.Kind == "Secret" && r.APIVersion == "v1") {
			continue
		}
		out = append(out, r)
	}
	return out
}

// setSourceCondition posts SourceAvailable (cistatus.Lifecycle). A missing source is written at
// once, because its transition time starts the removal grace period (DecideLifecycle), and it
// keeps its first message: it says when removal happens.
func (r *Reconciler) setSourceCondition(ctx context.Context, ci *v1alpha1.ClusterIngress, status metav1.ConditionStatus, reason, msg string) error {
	known := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionSourceAvailable)
	same := known != nil && known.Status == status && known.Reason == reason
	if same && status == metav1.ConditionFalse && known.Message != "" {
		msg = known.Message
	}
	meta.SetStatusCondition(&ci.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionSourceAvailable, Status: status,
		Reason: reason, Message: msg, ObservedGeneration: ci.Generation})
	if status == metav1.ConditionTrue || same {
		r.Board.Post(ctx, ci, cistatus.Lifecycle)
		return nil
	}
	return r.Board.Write(ctx, ci, cistatus.Lifecycle)
}

// describe names one source of kind in messages. Every kind it is asked for has a provider: a
// source was found by it, or its ClusterIngress' source is known to be gone.
func (r *Reconciler) describe(kind string) string {
	if p := r.Sources.For(kind); p != nil {
		return p.Description()
	}
	return kind + " source"
}
