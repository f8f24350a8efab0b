// Package cistatus writes a controller's part of a ClusterIngress' status, the one way every
// controller does.
package cistatus

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// Patch writes ci's status as a merge patch against before, when they differ. The patch carries
// an optimistic lock: other controllers write other conditions of the same status and a merge
// patch replaces whole lists, so it must never be based on a stale read (a conflict is retried
// from a fresh one).
func Patch(ctx context.Context, c client.Client, ci *v1alpha1.ClusterIngress, before *v1alpha1.ClusterIngressStatus) error {
	if equality.Semantic.DeepEqual(before, &ci.Status) {
		return nil
	}
	old := ci.DeepCopy()
	old.Status = *before
	return c.Status().Patch(ctx, ci, client.MergeFromWithOptions(old, client.MergeFromWithOptimisticLock{}), client.FieldOwner(v1alpha1.FieldOwner))
}
