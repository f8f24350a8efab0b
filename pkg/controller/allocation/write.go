package allocation

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/allocation"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// release takes Shardgate's label and annotations off a route that is another controller's
// now (an Ingress moved to another class; the admission policy keeps users from removing them),
// with an Event saying so (created once the pass' writes are done, writePass.later).
func (r *Reconciler) release(ctx context.Context, p *writePass, w client.Client, k routekinds.Kind, o, want client.Object,
) (bool, error) {
	if err := patchRoute(ctx, w, k, o, want); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return false, nil
		}
		what := fmt.Sprintf("release %s %s/%s", strings.ToLower(k.Name()), o.GetNamespace(), o.GetName())
		return false, clusteraccess.DescribeError(what, err)
	}
	r.record(ctx, p, w, k, o, corev1.EventTypeNormal, v1alpha1.AllocationReleased, k.ReleasedMessage())
	return true, nil
}

// write makes the route say what was decided, and records an Event when the decision changed
// (created once the pass' writes are done, writePass.later); with status false it leaves what
// TellStatus tells for a later pass (passOrder). It reports whether it wrote anything. Writes
// are patches of what changed (patchRoute), guarded by the cached object's resourceVersion, so a stale cache never overwrites a user's
// concurrent change of the rules; a conflict is left to the next pass, which the newer version's
// watch event starts.
//
// The address in a route's status (an Ingress' status.loadBalancer) is published by the shard's
// routers once they serve it (see Flavour), as OpenShift's router and ingress-nginx do: the
// ADDRESS column then also says that a router has picked the route up, and allocating costs the
// user cluster's API server two writes per route instead of three. Shardgate only clears the
// address of a route it rejects, which no router serves any more.
func (r *Reconciler) write(ctx context.Context, p *writePass, w client.Client, k routekinds.Kind, o client.Object,
	a allocation.Allocation, status bool) (bool, error) {
	if k.AlreadySays(o, a) {
		return false, nil // the common case on every pass: no copy, no request
	}
	what := fmt.Sprintf("%s %s/%s", strings.ToLower(k.Name()), o.GetNamespace(), o.GetName())
	want, changed := k.Tell(o, a)
	if changed {
		if err := patchRoute(ctx, w, k, o, want); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				return false, nil
			}
			return false, clusteraccess.DescribeError(what, err)
		}
		r.event(ctx, p, w, k, o, a)
	}
	if !status {
		return changed, nil
	}
	before := want.DeepCopyObject().(client.Object)
	if !k.TellStatus(want, a) {
		return changed, nil
	}
	patch := client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
	if err := w.Status().Patch(ctx, want, patch, client.FieldOwner(v1alpha1.FieldOwner)); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return changed, nil
		}
		return changed, clusteraccess.DescribeError(what+" status", err)
	}
	return true, nil
}

// patchRoute writes the labels, annotations and spec in which want differs from the cached route
// o, as a JSON merge patch guarded by o's resourceVersion. Never an update of the whole object:
// the cache holds routes trimmed to what Shardgate reads (routekinds.Cached), and an update
// would drop every annotation the trim left out. The patch names each changed key (routePatch):
// a diff of the two objects would send "annotations": null when the last annotation Shardgate
// saw goes, wiping the ones it did not.
func patchRoute(ctx context.Context, w client.Client, k routekinds.Kind, o, want client.Object) error {
	body, err := json.Marshal(routePatch(k, o, want))
	if err != nil {
		return err
	}
	return w.Patch(ctx, want, client.RawPatch(types.MergePatchType, body), client.FieldOwner(v1alpha1.FieldOwner))
}

// routePatch is the merge patch from o to want: the resourceVersion it was read at, each label
// and annotation set or removed, and the spec when it changed (the cache keeps it whole).
func routePatch(k routekinds.Kind, o, want client.Object) map[string]any {
	meta := map[string]any{"resourceVersion": o.GetResourceVersion()}
	if d := keyDiff(o.GetLabels(), want.GetLabels()); len(d) > 0 {
		meta["labels"] = d
	}
	if d := keyDiff(o.GetAnnotations(), want.GetAnnotations()); len(d) > 0 {
		meta["annotations"] = d
	}
	patch := map[string]any{"metadata": meta}
	if spec := k.Spec(want); !equality.Semantic.DeepEqual(k.Spec(o), spec) {
		patch["spec"] = specPatch(k.Spec(o), spec)
	}
	return patch
}

// specPatch is the merge patch of a spec: each top-level field that changed, whole, and null for
// each it no longer has (a merge patch leaves out what it does not name: the default backend Tell
// takes away would stay). A field that did not change is not named, so the API server keeps it as
// it is: a route's rules may carry fields of a newer API version than the types Shardgate decodes
// into, which writing them back would drop.
func specPatch(from, to any) any {
	var old, nu map[string]any
	if toMap(from, &old) != nil || toMap(to, &nu) != nil {
		return to
	}
	patch := map[string]any{}
	for k, v := range nu {
		if was, ok := old[k]; !ok || !reflect.DeepEqual(was, v) {
			patch[k] = v
		}
	}
	for k := range old {
		if _, ok := nu[k]; !ok {
			patch[k] = nil
		}
	}
	return patch
}

// toMap turns v into its JSON object form.
func toMap(v any, out *map[string]any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
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

// event records the decision on the route, in its namespace, for kubectl describe.
func (r *Reconciler) event(ctx context.Context, p *writePass, w client.Client, k routekinds.Kind, o client.Object,
	a allocation.Allocation) {
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
	r.record(ctx, p, w, k, o, typ, reason, msg)
}

// record writes an Event about the route, in its namespace, for kubectl describe, once the pass'
// writes are done (p.later).
func (r *Reconciler) record(ctx context.Context, p *writePass, w client.Client, k routekinds.Kind, o client.Object,
	typ, reason, msg string) {
	now := metav1.NewTime(time.Now())
	gvk := k.GroupVersionKind()
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: o.GetNamespace(), GenerateName: o.GetName() + "."},
		InvolvedObject: corev1.ObjectReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind,
			Namespace: o.GetNamespace(), Name: o.GetName(), UID: o.GetUID(), ResourceVersion: o.GetResourceVersion()},
		Type: typ, Reason: reason, Message: msg, Count: 1, FirstTimestamp: now, LastTimestamp: now,
		Source:              corev1.EventSource{Component: "shardgate"},
		ReportingController: "shardgate.io/seed-controller", ReportingInstance: "shardgate",
	}
	p.later(func() {
		if err := w.Create(ctx, ev); err != nil {
			d, _ := clusteraccess.Describe(err)
			log.FromContext(ctx).Info("could not record event", strings.ToLower(k.Name()),
				o.GetNamespace()+"/"+o.GetName(), "error", d)
		}
	})
}
