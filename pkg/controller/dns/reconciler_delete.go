package dns

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/dnsrecords"
)

// reconcileDelete removes the cluster's DNSEndpoint (external-dns then deletes the records) and
// releases the finalizer. The cluster itself is not needed for this.
func (r *Reconciler) reconcileDelete(ctx context.Context, ci *v1alpha1.ClusterIngress) error {
	key := client.ObjectKeyFromObject(ci)
	if !controllerutil.ContainsFinalizer(ci, v1alpha1.DNSCleanupFinalizer) {
		return nil
	}
	current, err := r.currentEndpoint(ctx, key)
	if err != nil {
		return err
	}
	if current != nil {
		if err := r.deleteEndpoint(ctx, current); err != nil {
			return err
		}
		log.FromContext(ctx).Info("DNSEndpoint deleted with its ClusterIngress")
	}
	readyIngressNodes.DeleteLabelValues(key.String())
	patch := client.MergeFrom(ci.DeepCopy())
	controllerutil.RemoveFinalizer(ci, v1alpha1.DNSCleanupFinalizer)
	return r.Client.Patch(ctx, ci, patch)
}

func (r *Reconciler) deleteEndpoint(ctx context.Context, ep *dnsrecords.DNSEndpoint) error {
	if err := r.Client.Delete(ctx, ep); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete DNSEndpoint: %w", err)
	}
	dnsWrites.WithLabelValues("delete").Inc()
	return nil
}
