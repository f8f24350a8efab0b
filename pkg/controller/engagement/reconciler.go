package engagement

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/apidiscovery"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/sources"
)

// Reconciler engages the user cluster of every ClusterIngress: it reads the
// kubeconfig, hands it to the Engager (which re-engages when it changed), and records why a
// cluster cannot be engaged. It writes nothing to the API; the DNS controller reports the
// outcome on status. It keeps a cluster engaged while the ClusterIngress is being deleted until
// the other controllers' cleanup finalizers are gone.
type Reconciler struct {
	Client client.Client
	// KubeconfigSecrets reads Secrets labelled shardgate.io/kubeconfig in the allowed namespaces
	// (a cache).
	KubeconfigSecrets client.Reader
	// ClusterAPISecrets reads a Cluster API <cluster>-kubeconfig Secret by name, uncached: the
	// controller never lists or caches the Secrets Cluster API keeps beside it (CA, etcd and
	// service-account keys, bootstrap data).
	ClusterAPISecrets client.Reader
	// Kubermatic's internal-admin-kubeconfig is read the same way (ClusterAPISecrets).
	ClusterAPI, Kubermatic *apidiscovery.API
	// SecretNamespaces are the namespaces kubeconfig Secrets may register clusters from.
	SecretNamespaces map[string]bool
	// Resync is how often a Cluster API kubeconfig is read again, since it is not watched
	// (rotation). A credential refusal re-reads it at once.
	Resync   time.Duration
	Registry clusteraccess.Registry
}

// Reconcile engages or disengages one ClusterIngress' user cluster.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ci := &v1alpha1.ClusterIngress{}
	if err := r.Client.Get(ctx, req.NamespacedName, ci); err != nil {
		if apierrors.IsNotFound(err) {
			r.Registry.Disengage(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if ci.DeletionTimestamp != nil && !controllerutil.ContainsFinalizer(ci, v1alpha1.UserClusterCleanupFinalizer) &&
		!controllerutil.ContainsFinalizer(ci, v1alpha1.AllocationCleanupFinalizer) &&
		!controllerutil.ContainsFinalizer(ci, v1alpha1.RoutedIPCleanupFinalizer) {
		r.Registry.Disengage(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	result := ctrl.Result{}
	if ci.Spec.ClusterRef.Kind == v1alpha1.SourceKindCluster || ci.Spec.ClusterRef.Kind == v1alpha1.SourceKindKubermatic {
		result.RequeueAfter = r.Resync
	}
	secret, reason, err := r.kubeconfigSecret(ctx, ci)
	if err != nil {
		if reason == "" {
			return ctrl.Result{}, err
		}
		// A condition, not a hot retry: the Secret or Cluster watch (or the resync) brings us back.
		r.Registry.Block(req.NamespacedName, reason, err.Error())
		return result, nil
	}
	kc, err := clusteraccess.KubeconfigFromSecret(secret)
	if err == nil {
		err = r.Registry.Engage(req.NamespacedName, kc)
	}
	if err != nil {
		if errors.Is(err, clusteraccess.ErrKubeconfigInvalid) {
			// The message names the field, never its value.
			log.FromContext(ctx).Info("kubeconfig unusable", "secret", secret.Name, "error", err.Error())
			r.Registry.Block(req.NamespacedName, v1alpha1.ReasonKubeconfigInvalid, err.Error())
			return result, nil
		}
		return ctrl.Result{}, err
	}
	return result, nil
}

// kubeconfigSecret returns the Secret with the cluster's kubeconfig, or a reason constant and an
// error saying why there is none to use.
func (r *Reconciler) kubeconfigSecret(ctx context.Context, ci *v1alpha1.ClusterIngress) (*corev1.Secret, string, error) {
	ns := ci.Namespace
	switch ci.Spec.ClusterRef.Kind {
	case v1alpha1.SourceKindCluster:
		if !r.ClusterAPI.Available() {
			return nil, v1alpha1.ReasonKubeconfigMissing, fmt.Errorf("cluster %s is a Cluster API Cluster, but Cluster API has not been found in the seed (yet)", ci.Spec.ClusterRef.Name)
		}
		c := &clusterv1.Cluster{}
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: ci.Spec.ClusterRef.Name}, c); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, v1alpha1.ReasonKubeconfigMissing, fmt.Errorf("cluster API Cluster %s/%s not found", ns, ci.Spec.ClusterRef.Name)
			}
			return nil, "", err
		}
		src := sources.FromCluster(c)
		if !src.Initialized {
			return nil, v1alpha1.ReasonControlPlaneNotReady, fmt.Errorf("cluster API Cluster %s/%s: control plane not initialized yet", ns, c.Name)
		}
		return getSecret(ctx, r.ClusterAPISecrets, ns, src.KubeconfigSecret)
	case v1alpha1.SourceKindKubermatic:
		if !r.Kubermatic.Available() {
			return nil, v1alpha1.ReasonKubeconfigMissing, fmt.Errorf("cluster %s is a Kubermatic Cluster, but Kubermatic has not been found in the seed (yet)", ci.Spec.ClusterRef.Name)
		}
		c := &sources.KubermaticCluster{}
		if err := r.Client.Get(ctx, types.NamespacedName{Name: ci.Spec.ClusterRef.Name}, c); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, v1alpha1.ReasonKubeconfigMissing, fmt.Errorf("kubermatic Cluster %s not found", ci.Spec.ClusterRef.Name)
			}
			return nil, "", err
		}
		src := sources.FromKubermatic(c)
		if src.Namespace != ns {
			return nil, v1alpha1.ReasonKubeconfigMissing, fmt.Errorf("kubermatic Cluster %s lives in namespace %q, not %s", c.Name, src.Namespace, ns)
		}
		if !src.Initialized {
			return nil, v1alpha1.ReasonControlPlaneNotReady, fmt.Errorf("kubermatic Cluster %s: its API server is not healthy yet", c.Name)
		}
		return getSecret(ctx, r.ClusterAPISecrets, ns, src.KubeconfigSecret)
	case v1alpha1.SourceKindSecret:
		if !r.SecretNamespaces[ns] {
			return nil, v1alpha1.ReasonKubeconfigMissing, fmt.Errorf("namespace %s is not one the controller reads kubeconfig Secrets from (--kubeconfig-secret-namespaces)", ns)
		}
		return getSecret(ctx, r.KubeconfigSecrets, ns, ci.Spec.ClusterRef.Name)
	default:
		return nil, v1alpha1.ReasonKubeconfigMissing, fmt.Errorf("unknown cluster source kind %q", ci.Spec.ClusterRef.Kind)
	}
}

func getSecret(ctx context.Context, rd client.Reader, ns, name string) (*corev1.Secret, string, error) {
	s := &corev1.Secret{}
	if err := rd.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, v1alpha1.ReasonKubeconfigMissing, fmt.Errorf("kubeconfig Secret %s/%s not found", ns, name)
		}
		return nil, "", err
	}
	return s, "", nil
}
