package cistatus

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/csaupgrade"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// Reconcile writes the posted parts of one ClusterIngress: the writer controller (add.go).
func (b *Board) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	mark := b.Mark()
	ci := &v1alpha1.ClusterIngress{}
	if err := b.client.Get(ctx, req.NamespacedName, ci); err != nil {
		if apierrors.IsNotFound(err) {
			b.ForgetUnlessPostedSince(req.NamespacedName, mark)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	b.forgetDeletedNamesake(ci)
	first := ci.Status.Domain == "" && b.lastWritten(req.NamespacedName) == nil
	if wait := b.yieldFor(req.NamespacedName, first); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	return ctrl.Result{}, b.write(ctx, ci, false)
}

// write applies the status composed from the newest known status of the object and the posted
// parts, when it differs. The newest known is the cached read (ci) or this board's last write,
// whichever is newer; before this board wrote the cluster's status (a start, a hand-over from
// another replica) it is read from the API server, never from a cache that may lag another
// replica's writes. A cluster's first status waits for the DNS controller's part (it says whether
// the cluster is still being contacted) unless force is set: the identity controller's domain,
// posted as the cluster appeared, goes out with it, so a new cluster's first status says held,
// reachable and published in one write.
func (b *Board) write(ctx context.Context, ci *v1alpha1.ClusterIngress, force bool) error {
	key := client.ObjectKeyFromObject(ci)
	defer b.lockWrites(key)()
	parts := b.partsOf(ci)
	if len(parts) == 0 {
		return nil
	}
	base, err := b.base(ctx, ci)
	if err != nil {
		return err
	}
	if _, ok := parts[DNS]; !ok && !force && len(base.Status.Conditions) == 0 {
		return nil
	}
	parts = b.withinBudget(ctx, key, base, b.withoutRefused(key, parts))
	desired := Compose(&base.Status, parts, base.Generation, b.clock.Now())
	if equality.Semantic.DeepEqual(&desired, &base.Status) {
		return nil
	}
	stored, err := b.apply(ctx, key, &desired)
	if apierrors.IsInvalid(err) {
		stored, desired, err = b.applyValidParts(ctx, base, parts)
	}
	if err != nil {
		return err
	}
	if managers := legacyStatusManagers(stored); len(managers) > 0 {
		// Written before by update or merge patch (an older Shardgate): those managers still own
		// fields this apply left out, which therefore stay. Hand their fields to the apply
		// manager once, and apply again so that what was left out goes.
		if err := b.adoptLegacy(ctx, stored, managers); err != nil {
			return err
		}
		if stored, err = b.apply(ctx, key, &desired); err != nil {
			return err
		}
	}
	b.setWritten(key, stored)
	statusWrites.Inc()
	return nil
}

// maxStatusBytes bounds a ClusterIngress' status as written: etcd refuses a request past 1.5 MiB,
// and not as Invalid, so one owner's part swollen by its cluster's input (O's 10,000 nodes with
// 253-byte names in readyNodes) would keep every other part unwritten, the ones that must be
// stored before their controller goes on too.
const maxStatusBytes = 512 << 10

// withinBudget cuts the largest part's lists (its owner's trims, a stage at a time) or else leaves it out, as
// refused, until the composed status fits maxStatusBytes. A part left out keeps the values the
// object has, until its owner posts another.
func (b *Board) withinBudget(ctx context.Context, key types.NamespacedName, base *v1alpha1.ClusterIngress,
	parts map[Owner]*v1alpha1.ClusterIngressStatus) map[Owner]*v1alpha1.ClusterIngressStatus {
	trimmed := map[Owner]int{} // the trim stages done
	for len(parts) > 0 {
		desired := Compose(&base.Status, parts, base.Generation, b.clock.Now())
		if jsonSize(&desired) <= maxStatusBytes {
			return parts
		}
		var largest Owner
		size := -1
		for o, p := range parts {
			if n := jsonSize(p); n > size {
				largest, size = o, n
			}
		}
		if trims := owned[largest].trims; trimmed[largest] < len(trims) {
			log.FromContext(ctx).Error(nil, "this controller's part of the status is too large to write; its lists are cut",
				"owner", largest, "bytes", size, "limit", maxStatusBytes, "stage", trimmed[largest]+1)
			part := parts[largest].DeepCopy()
			trims[trimmed[largest]](part)
			parts[largest] = part
			trimmed[largest]++
			continue
		}
		log.FromContext(ctx).Error(nil, "this controller's part of the status is too large to write; the others are written",
			"owner", largest, "bytes", size, "limit", maxStatusBytes)
		partsRefused.WithLabelValues(string(largest)).Inc()
		b.refuse(key, largest, parts[largest])
		delete(parts, largest)
	}
	return parts
}

func jsonSize(v any) int {
	body, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return len(body)
}

// base is the newest status known of ci's object (see write).
func (b *Board) base(ctx context.Context, ci *v1alpha1.ClusterIngress) (*v1alpha1.ClusterIngress, error) {
	key := client.ObjectKeyFromObject(ci)
	written := b.lastWritten(key)
	if written != nil {
		if newer, ok := newerThan(ci.ResourceVersion, written.ResourceVersion); ok {
			if newer {
				return ci, nil
			}
			out := ci.DeepCopy()
			out.Status = *written.Status.DeepCopy()
			return out, nil
		}
	}
	fresh := &v1alpha1.ClusterIngress{}
	if err := b.reader().Get(ctx, key, fresh); err != nil {
		return nil, err
	}
	return fresh, nil
}

// newerThan says whether resourceVersion a is at least as new as b. Resource versions are etcd
// revisions, which grow with every write; ok is false when either is not one (then the
// caller reads the object from the API server instead of guessing).
func newerThan(a, b string) (newer, ok bool) {
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	return x >= y, err1 == nil && err2 == nil
}

// applyValidParts writes what the API server takes when it refused the composed status (a part
// breaks the schema: a bug, or a message past its bound): each part is tried alone over base
// (a dry run), the refused ones keep base's values and are remembered until their owner posts
// something else, so one controller's bad part never keeps the others' unwritten.
func (b *Board) applyValidParts(ctx context.Context, base *v1alpha1.ClusterIngress,
	parts map[Owner]*v1alpha1.ClusterIngressStatus) (*v1alpha1.ClusterIngress, v1alpha1.ClusterIngressStatus, error) {
	key := client.ObjectKeyFromObject(base)
	valid := map[Owner]*v1alpha1.ClusterIngressStatus{}
	for _, o := range order {
		p, ok := parts[o]
		if !ok {
			continue
		}
		alone := Compose(&base.Status, map[Owner]*v1alpha1.ClusterIngressStatus{o: p}, base.Generation, b.clock.Now())
		_, err := b.apply(ctx, key, &alone, client.DryRunAll)
		switch {
		case apierrors.IsInvalid(err):
			log.FromContext(ctx).Error(err, "the API server refuses this controller's part of the status; the others are written", "owner", o)
			partsRefused.WithLabelValues(string(o)).Inc()
			b.refuse(key, o, p)
		case err != nil:
			return nil, v1alpha1.ClusterIngressStatus{}, err
		default:
			valid[o] = p
		}
	}
	desired := Compose(&base.Status, valid, base.Generation, b.clock.Now())
	stored, err := b.apply(ctx, key, &desired)
	return stored, desired, err
}

// apply writes status with server-side apply, Shardgate's field manager owning all of it.
func (b *Board) apply(ctx context.Context, key types.NamespacedName, status *v1alpha1.ClusterIngressStatus,
	opts ...client.SubResourcePatchOption) (*v1alpha1.ClusterIngress, error) {
	body, err := json.Marshal(map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "ClusterIngress",
		"metadata": map[string]any{"name": key.Name, "namespace": key.Namespace},
		"status":   status,
	})
	if err != nil {
		return nil, err
	}
	obj := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}}
	opts = append(opts, client.FieldOwner(v1alpha1.FieldOwner), client.ForceOwnership)
	err = b.client.Status().Patch(ctx, obj, client.RawPatch(types.ApplyPatchType, body), opts...)
	return obj, err
}

// legacyStatusManagers are the managers that wrote obj's status other than by apply.
func legacyStatusManagers(obj *v1alpha1.ClusterIngress) sets.Set[string] {
	out := sets.New[string]()
	for _, f := range obj.ManagedFields {
		if f.Subresource == "status" && f.Operation != metav1.ManagedFieldsOperationApply {
			out.Insert(f.Manager)
		}
	}
	return out
}

// adoptLegacy moves the status fields of managers to Shardgate's apply manager (client-go's
// csaupgrade, as kubectl does when it switches to server-side apply).
func (b *Board) adoptLegacy(ctx context.Context, obj *v1alpha1.ClusterIngress, managers sets.Set[string]) error {
	patch, err := csaupgrade.UpgradeManagedFieldsPatch(obj, managers, v1alpha1.FieldOwner, csaupgrade.Subresource("status"))
	if err != nil || patch == nil {
		return err
	}
	if err := b.client.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		return fmt.Errorf("hand the status' fields to %s: %w", v1alpha1.FieldOwner, err)
	}
	legacyAdopted.Inc()
	return nil
}
