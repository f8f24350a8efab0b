package routedips

import (
	"context"
	"fmt"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/routedip"
)

// Address claims: the API server, not a cache, judges which cluster an address is admitted for.
// Each address recorded for a cluster has a Lease in the Job namespace, "routed-ip-<address>",
// whose holderIdentity is the cluster (namespace/name). A cluster takes an address only by
// creating that Lease, or by updating it (optimistic lock) once the cluster that held it is gone,
// and it does so before the address is recorded, so before any Job is created for it. Two
// clusters (or two replicas) asking at once: one create wins, the other is refused.

func addressLeaseName(address string) string {
	return "routed-ip-" + strings.ReplaceAll(address, ".", "-")
}

func clusterIdentity(ci *v1alpha1.ClusterIngress) string { return ci.Namespace + "/" + ci.Name }

// claimAddresses turns admitted verdicts whose address another cluster claimed in the API server
// into refusals (AddressInUse). Addresses the cluster already records keep their claim.
func (r *Reconciler) claimAddresses(ctx context.Context, ci *v1alpha1.ClusterIngress, verdicts []routedip.Verdict) ([]routedip.Verdict, error) {
	for i := range verdicts {
		v := &verdicts[i]
		if !v.Admitted {
			continue
		}
		ok, err := r.claimAddress(ctx, ci, v.Address)
		if err != nil {
			return nil, err
		}
		if !ok {
			v.Admitted, v.Reason, v.Message = false, v1alpha1.ReasonAddressInUse, v.Address+" is held for another cluster"
		}
	}
	return verdicts, nil
}

// claimAddress: whether the cluster holds the address' Lease (taking it if it is free).
func (r *Reconciler) claimAddress(ctx context.Context, ci *v1alpha1.ClusterIngress, address string) (bool, error) {
	me := clusterIdentity(ci)
	key := client.ObjectKey{Namespace: r.JobNamespace, Name: addressLeaseName(address)}
	l := &coordinationv1.Lease{}
	err := r.APIReader.Get(ctx, key, l)
	switch {
	case apierrors.IsNotFound(err):
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: map[string]string{
			v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue, routedip.JobClusterLabel: routedip.ClusterHash(ci.Namespace, ci.Name),
			routedip.JobAddressLabel: address}}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &me}}
		if err := r.Client.Create(ctx, l); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return false, nil // another cluster was first
			}
			return false, err
		}
		return true, nil
	case err != nil:
		return false, err
	}
	holder := ""
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	if holder == me {
		return true, nil
	}
	// Taken over only from a cluster that no longer exists: one that merely cannot be observed
	// keeps its addresses, as its records do. A holder that names no cluster holds nothing (a
	// Get with an empty name would fail this cluster's every pass).
	if ns, name, ok := strings.Cut(holder, "/"); ok && ns != "" && name != "" {
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &v1alpha1.ClusterIngress{})
		if !apierrors.IsNotFound(err) {
			return false, client.IgnoreNotFound(err)
		}
	}
	l.Spec.HolderIdentity = &me
	if l.Labels == nil {
		l.Labels = map[string]string{}
	}
	l.Labels[routedip.JobClusterLabel] = routedip.ClusterHash(ci.Namespace, ci.Name)
	if err := r.Client.Update(ctx, l); err != nil { // carries the resourceVersion read: an optimistic lock
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// releaseAddresses deletes the cluster's Leases of addresses it no longer records (keep: the
// records' addresses; nil releases all), each only as it was read (a Lease taken over meanwhile
// is not this cluster's to delete).
func (r *Reconciler) releaseAddresses(ctx context.Context, ci *v1alpha1.ClusterIngress, keep []v1alpha1.RoutedIPRecord) error {
	leases := &coordinationv1.LeaseList{}
	if err := r.APIReader.List(ctx, leases, client.InNamespace(r.JobNamespace),
		client.MatchingLabels{routedip.JobClusterLabel: routedip.ClusterHash(ci.Namespace, ci.Name)}); err != nil {
		return err
	}
	held := map[string]bool{}
	for _, rec := range keep {
		held[addressLeaseName(rec.Address)] = true
	}
	for i := range leases.Items {
		l := &leases.Items[i]
		if held[l.Name] || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != clusterIdentity(ci) {
			continue
		}
		err := r.Client.Delete(ctx, l, client.Preconditions{UID: &l.UID, ResourceVersion: &l.ResourceVersion})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("release the claim %s: %w", l.Name, err)
		}
	}
	return nil
}
