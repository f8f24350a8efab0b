package allocation

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/allocation"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
)

// release takes Shardgate's label and annotations off an Ingress that moved to another ingress
// class (the admission policy keeps users from removing them), with an Event saying so.
func (r *Reconciler) release(ctx context.Context, w client.Client, ing *networkingv1.Ingress) (bool, error) {
	if err := patchIngress(ctx, w, ing, allocation.Untell(ing)); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, clusteraccess.DescribeError(fmt.Sprintf("release ingress %s/%s", ing.Namespace, ing.Name), err)
	}
	r.record(ctx, w, ing, corev1.EventTypeNormal, v1alpha1.AllocationReleased,
		"the Ingress is another ingress controller's now (its class): Shardgate no longer allocates it")
	return true, nil
}

// write makes the Ingress say what was decided, and records an Event when the decision changed.
// It reports whether it wrote anything. Writes are patches of what changed (patchIngress),
// guarded by the cached object's resourceVersion, so a stale cache never overwrites a user's
// concurrent change of the rules; a conflict is left to the next pass, which the newer version's
// watch event starts.
//
// The address (status.loadBalancer) of an allocated Ingress is published by the shard's routers
// once they serve it (see Flavour), as OpenShift's router and ingress-nginx do: the ADDRESS
// column then also says that a router has picked the Ingress up, and allocating costs the user
// cluster's API server two writes per Ingress instead of three. Shardgate only clears the
// address of an Ingress it rejects, which no router serves any more.
func (r *Reconciler) write(ctx context.Context, w client.Client, ing *networkingv1.Ingress, a allocation.Allocation) (bool, error) {
	if allocation.AlreadySays(ing, a) {
		return false, nil // the common case on every pass: no copy, no request
	}
	want, changed := allocation.Tell(ing, a)
	if changed {
		if err := patchIngress(ctx, w, ing, want); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				return false, nil
			}
			return false, clusteraccess.DescribeError(fmt.Sprintf("ingress %s/%s", ing.Namespace, ing.Name), err)
		}
		r.event(ctx, w, ing, a)
	}
	if !a.Rejected || len(want.Status.LoadBalancer.Ingress) == 0 {
		return changed, nil
	}
	before := want.DeepCopy()
	want.Status.LoadBalancer.Ingress = nil
	patch := client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
	if err := w.Status().Patch(ctx, want, patch, client.FieldOwner(v1alpha1.FieldOwner)); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return changed, nil
		}
		return changed, clusteraccess.DescribeError(fmt.Sprintf("ingress %s/%s status", ing.Namespace, ing.Name), err)
	}
	return true, nil
}

// patchIngress writes the labels, annotations and rules in which want differs from the cached
// Ingress ing, as a JSON merge patch guarded by ing's resourceVersion. Never an update of the
// whole object: the cache holds Ingresses trimmed to what Shardgate reads
// (clusteraccess.TrimIngress), and an update would drop every annotation the trim left out.
// The patch names each changed key (ingressPatch): a diff of the two objects would send
// "annotations": null when the last annotation Shardgate saw goes, wiping the ones it did not.
func patchIngress(ctx context.Context, w client.Client, ing, want *networkingv1.Ingress) error {
	body, err := json.Marshal(ingressPatch(ing, want))
	if err != nil {
		return err
	}
	return w.Patch(ctx, want, client.RawPatch(types.MergePatchType, body), client.FieldOwner(v1alpha1.FieldOwner))
}

// ingressPatch is the merge patch from ing to want: the resourceVersion it was read at, each
// label and annotation set or removed, and the spec when it changed (the cache keeps it whole).
func ingressPatch(ing, want *networkingv1.Ingress) map[string]any {
	meta := map[string]any{"resourceVersion": ing.ResourceVersion}
	if d := keyDiff(ing.Labels, want.Labels); len(d) > 0 {
		meta["labels"] = d
	}
	if d := keyDiff(ing.Annotations, want.Annotations); len(d) > 0 {
		meta["annotations"] = d
	}
	patch := map[string]any{"metadata": meta}
	if !equality.Semantic.DeepEqual(ing.Spec, want.Spec) {
		patch["spec"] = want.Spec
	}
	return patch
}

// keyDiff is the merge patch of one string map: changed and added keys, and null for removed ones.
func keyDiff(from, to map[string]string) map[string]any {
	d := map[string]any{}
	for k, v := range to {
		if old, ok := from[k]; !ok || old != v {
			d[k] = v
		}
	}
	for k := range from {
		if _, ok := to[k]; !ok {
			d[k] = nil
		}
	}
	return d
}

// event records the decision on the Ingress, in its namespace, for kubectl describe.
func (r *Reconciler) event(ctx context.Context, w client.Client, ing *networkingv1.Ingress, a allocation.Allocation) {
	typ, reason, msg := corev1.EventTypeNormal, v1alpha1.AllocationAllocated,
		fmt.Sprintf("allocated to shard %s; hosts %s", a.Shard, strings.Join(a.Hosts, ", "))
	switch {
	case a.Rejected:
		typ, reason, msg = corev1.EventTypeWarning, v1alpha1.AllocationRejected, a.Reason
	case a.MovedFrom != "":
		typ, reason = corev1.EventTypeWarning, v1alpha1.AllocationMoved
		msg = fmt.Sprintf("moved from shard %s to shard %s: %s (hosts %s)", a.MovedFrom, a.Shard, a.MoveReason, strings.Join(a.Hosts, ", "))
	}
	if a.CNAMETarget != "" && !a.Rejected {
		msg += "; point your DNS at it: CNAME " + a.CNAMETarget
	}
	r.record(ctx, w, ing, typ, reason, msg)
}

// record writes an Event about the Ingress, in its namespace, for kubectl describe.
func (r *Reconciler) record(ctx context.Context, w client.Client, ing *networkingv1.Ingress, typ, reason, msg string) {
	now := metav1.NewTime(time.Now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: ing.Namespace, GenerateName: ing.Name + "."},
		InvolvedObject: corev1.ObjectReference{APIVersion: "networking.k8s.io/v1", Kind: "Ingress", Namespace: ing.Namespace,
			Name: ing.Name, UID: ing.UID, ResourceVersion: ing.ResourceVersion},
		Type: typ, Reason: reason, Message: msg, Count: 1, FirstTimestamp: now, LastTimestamp: now,
		Source: corev1.EventSource{Component: "shardgate"}, ReportingController: "shardgate.io/seed-controller", ReportingInstance: "shardgate",
	}
	if err := w.Create(ctx, ev); err != nil {
		d, _ := clusteraccess.Describe(err)
		log.FromContext(ctx).Info("could not record event", "ingress", ing.Namespace+"/"+ing.Name, "error", d)
	}
}
