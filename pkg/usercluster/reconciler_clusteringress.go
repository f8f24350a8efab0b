package usercluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// ClusterIngressReconciler keeps one ClusterIngress per user cluster that an IngressProfile
// selects: created with the source's namespace and name, owned by the source, spec resolved from
// the profile; deleted when the source goes or no profile selects it any more (the DNS
// controller's finalizer then removes the records).
type ClusterIngressReconciler struct {
	Client client.Client
	// DefaultZone is the controller's --dns-zone.
	DefaultZone string
	// ClusterAPI is true when the seed serves cluster.x-k8s.io Clusters.
	ClusterAPI bool
}

// Reconcile handles the source named by req (Cluster or kubeconfig Secret, same key as its
// ClusterIngress).
func (r *ClusterIngressReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	src, owner, err := r.source(ctx, req.NamespacedName)
	if err != nil {
		return ctrl.Result{}, err
	}
	ci := &v1alpha1.ClusterIngress{}
	if err := r.Client.Get(ctx, req.NamespacedName, ci); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		ci = nil
	}
	if owner == nil || src.Deleting {
		return ctrl.Result{}, r.deleteIfOurs(ctx, ci, "cluster source gone")
	}
	profiles := &v1alpha1.IngressProfileList{}
	if err := r.Client.List(ctx, profiles); err != nil {
		return ctrl.Result{}, err
	}
	p := SelectProfile(profiles.Items, src.Labels)
	if p == nil {
		return ctrl.Result{}, r.deleteIfOurs(ctx, ci, "no IngressProfile selects the cluster")
	}
	if ci != nil && ci.Spec.ClusterRef.Kind != src.Kind {
		// A Cluster and a kubeconfig Secret with the same name: the first one keeps it.
		log.FromContext(ctx).Info("name taken by another cluster source; not managing it", "existing", ci.Spec.ClusterRef.Kind, "source", src.Kind)
		return ctrl.Result{}, nil
	}
	want := v1alpha1.ClusterIngressSpec{
		ClusterRef: v1alpha1.ClusterReference{Kind: src.Kind, Name: src.Name},
		Profile:    p.Name,
		ClusterID:  src.ClusterID,
		DNS:        ResolveDNS(p, r.DefaultZone),
		Shards:     v1alpha1.ResolveShards(p.Spec.Shards),
		Allocation: p.Spec.Allocation,
	}
	if ci == nil {
		ci = &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: src.Namespace, Name: src.Name}}
	} else if ci.DeletionTimestamp != nil {
		return ctrl.Result{}, nil // being removed; recreated once it is gone
	}
	op, err := controllerutil.CreateOrPatch(ctx, r.Client, ci, func() error {
		ci.Spec = want
		if ci.Labels == nil {
			ci.Labels = map[string]string{}
		}
		ci.Labels[v1alpha1.ClusterIngressLabel] = src.Name
		return controllerutil.SetControllerReference(owner, ci, r.Client.Scheme())
	})
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("apply ClusterIngress: %w", err)
	}
	if op != controllerutil.OperationResultNone {
		log.FromContext(ctx).Info("ClusterIngress "+string(op), "profile", p.Name, "clusterID", src.ClusterID)
	}
	return ctrl.Result{}, nil
}

// source finds the user cluster named key: a Cluster API Cluster first, else a kubeconfig Secret.
func (r *ClusterIngressReconciler) source(ctx context.Context, key types.NamespacedName) (Source, client.Object, error) {
	if r.ClusterAPI {
		c := &clusterv1.Cluster{}
		err := r.Client.Get(ctx, key, c)
		if err == nil {
			return FromCluster(c), c, nil
		}
		if !apierrors.IsNotFound(err) {
			return Source{}, nil, err
		}
	}
	s := &corev1.Secret{}
	err := r.Client.Get(ctx, key, s)
	if err == nil {
		if _, ok := s.Labels[v1alpha1.KubeconfigSecretLabel]; ok {
			return FromSecret(s), s, nil
		}
		return Source{}, nil, nil
	}
	if apierrors.IsNotFound(err) {
		return Source{}, nil, nil
	}
	return Source{}, nil, err
}

func (r *ClusterIngressReconciler) deleteIfOurs(ctx context.Context, ci *v1alpha1.ClusterIngress, why string) error {
	if ci == nil || ci.DeletionTimestamp != nil {
		return nil
	}
	log.FromContext(ctx).Info("deleting ClusterIngress", "reason", why)
	if err := r.Client.Delete(ctx, ci); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}
