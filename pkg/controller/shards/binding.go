package shards

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// apply applies o. A ClusterRoleBinding whose roleRef changed (a shard whose flavour changed now
// binds another flavour's role) cannot be updated — the API server refuses a new roleRef — so it
// is replaced, as `kubectl auth reconcile` does: left alone, the shard's apply would stop at it on
// every pass and its routers would never become the new flavour's.
func apply(ctx context.Context, w client.Client, o *unstructured.Unstructured) error {
	err := w.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner(v1alpha1.FieldOwner), client.ForceOwnership)
	if o.GetKind() != "ClusterRoleBinding" || !apierrors.IsInvalid(err) {
		return err
	}
	live := &rbacv1.ClusterRoleBinding{}
	if getErr := w.Get(ctx, client.ObjectKeyFromObject(o), live); getErr != nil {
		return err
	}
	ref, _, _ := unstructured.NestedString(o.Object, "roleRef", "name")
	if live.RoleRef.Name == ref {
		return err // invalid for another reason: say so
	}
	// Only this binding goes, and only as it was read: a binding replaced meanwhile stays.
	uid := live.UID
	if err := w.Delete(ctx, live, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
		return err
	}
	return w.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner(v1alpha1.FieldOwner), client.ForceOwnership)
}
