package allocation

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/allocation"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
)

// release takes Shardgate's label and annotations off an Ingress that moved to another ingress
// class (the admission policy keeps users from removing them), with an Event saying so.
func (r *Reconciler) release(ctx context.Context, w client.Client, ing *networkingv1.Ingress) (bool, error) {
	if err := w.Update(ctx, allocation.Untell(ing), client.FieldOwner(v1alpha1.FieldOwner)); err != nil {
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
// It reports whether it wrote anything. Writes are updates of the cached object: sent as
// protobuf (cheaper for the API server than a JSON merge patch) and guarded by its
// resourceVersion, so a stale cache never overwrites a user's concurrent change of the rules; a
// conflict is left to the next pass, which the newer version's watch event starts.
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
		if err := w.Update(ctx, want, client.FieldOwner(v1alpha1.FieldOwner)); err != nil {
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
	want.Status.LoadBalancer.Ingress = nil
	if err := w.Status().Update(ctx, want, client.FieldOwner(v1alpha1.FieldOwner)); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return changed, nil
		}
		return changed, clusteraccess.DescribeError(fmt.Sprintf("ingress %s/%s status", ing.Namespace, ing.Name), err)
	}
	return true, nil
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
