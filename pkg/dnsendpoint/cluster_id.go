package dnsendpoint

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// clusterIDIndex indexes ClusterIngresses by spec.clusterID.
const clusterIDIndex = "spec.clusterID"

// idOwner returns the ClusterIngress that owns ci's cluster ID: of all ClusterIngresses asking
// for it, the one whose cluster source is oldest (then by namespace/name).
func (r *Reconciler) idOwner(ctx context.Context, ci *v1alpha1.ClusterIngress) (types.NamespacedName, error) {
	list := &v1alpha1.ClusterIngressList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{clusterIDIndex: ci.Spec.ClusterID}); err != nil {
		return types.NamespacedName{}, err
	}
	me := client.ObjectKeyFromObject(ci)
	if len(list.Items) <= 1 {
		return me, nil
	}
	var cands []Claim
	for i := range list.Items {
		c := &list.Items[i]
		if c.DeletionTimestamp != nil {
			continue
		}
		created, err := r.sourceCreated(ctx, c)
		if err != nil {
			return types.NamespacedName{}, err
		}
		cands = append(cands, Claim{Key: client.ObjectKeyFromObject(c), Created: created})
	}
	if len(cands) == 0 {
		return me, nil
	}
	return OldestClaim(cands), nil
}

// sourceCreated is the creation time of the Cluster or Secret behind a ClusterIngress (the
// ClusterIngress' own when the source is gone).
func (r *Reconciler) sourceCreated(ctx context.Context, ci *v1alpha1.ClusterIngress) (metav1.Time, error) {
	key := types.NamespacedName{Namespace: ci.Namespace, Name: ci.Spec.ClusterRef.Name}
	var obj client.Object = &corev1.Secret{}
	if ci.Spec.ClusterRef.Kind == v1alpha1.SourceKindCluster {
		obj = &clusterv1.Cluster{}
	}
	if err := r.Client.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return ci.CreationTimestamp, nil
		}
		return metav1.Time{}, fmt.Errorf("source of %s: %w", key, err)
	}
	return obj.GetCreationTimestamp(), nil
}

// Claim is one cluster asking for a cluster ID.
type Claim struct {
	Key     types.NamespacedName
	Created metav1.Time
}

// OldestClaim decides an ID collision: the oldest cluster keeps the ID; ties go to the smaller
// namespace/name so the decision is stable.
func OldestClaim(claims []Claim) types.NamespacedName {
	best := claims[0]
	for _, c := range claims[1:] {
		if c.Created.Before(&best.Created) || (c.Created.Equal(&best.Created) && c.Key.String() < best.Key.String()) {
			best = c
		}
	}
	return best.Key
}
