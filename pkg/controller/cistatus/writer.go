package cistatus

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/csaupgrade"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
	return ctrl.Result{}, b.write(ctx, ci, false)
}

// write applies the status composed from ci's (the caller's read) and the posted parts, when it
// differs from both ci's and the last one written. A cluster's first status waits for the DNS
// controller's part (it holds the domain, and says whether the cluster is still being
// contacted) unless force is set.
func (b *Board) write(ctx context.Context, ci *v1alpha1.ClusterIngress, force bool) error {
	key := client.ObjectKeyFromObject(ci)
	defer b.lockWrites(key)()
	parts := b.parts(key)
	if len(parts) == 0 {
		return nil
	}
	written := b.lastWritten(key)
	if _, ok := parts[DNS]; !ok && !force && written == nil && len(ci.Status.Conditions) == 0 {
		return nil
	}
	desired := Compose(&ci.Status, parts, ci.Generation, b.clock.Now())
	if equality.Semantic.DeepEqual(&desired, &ci.Status) || (written != nil && equality.Semantic.DeepEqual(&desired, written)) {
		return nil
	}
	stored, err := b.apply(ctx, key, &desired)
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
	b.setWritten(key, &stored.Status)
	statusWrites.Inc()
	return nil
}

// apply writes status with server-side apply, Shardgate's field manager owning all of it.
func (b *Board) apply(ctx context.Context, key types.NamespacedName, status *v1alpha1.ClusterIngressStatus) (*v1alpha1.ClusterIngress, error) {
	body, err := json.Marshal(map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "ClusterIngress",
		"metadata": map[string]any{"name": key.Name, "namespace": key.Namespace},
		"status":   status,
	})
	if err != nil {
		return nil, err
	}
	obj := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}}
	err = b.client.Status().Patch(ctx, obj, client.RawPatch(types.ApplyPatchType, body),
		client.FieldOwner(v1alpha1.FieldOwner), client.ForceOwnership)
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
