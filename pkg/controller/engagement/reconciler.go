package engagement

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shardgate/shardgate/api/v1alpha1"
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
	// UnwatchedSecrets reads the kubeconfig Secret of a source whose provider does not watch it
	// (a Cluster API <cluster>-kubeconfig) by name, uncached: the controller never lists or
	// caches the Secrets beside it (CA, etcd and service-account keys, bootstrap data).
	UnwatchedSecrets client.Reader
	// Sources are the cluster source providers.
	Sources sources.Registry
	// Resync is how often a kubeconfig that is not watched is read again (rotation). A
	// credential refusal re-reads it at once.
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
	if p := r.Sources.For(ci.Spec.ClusterRef.Kind); p != nil && !p.KubeconfigWatched() {
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
		// The settings found at first contact come with the kubeconfig: a profile that turns
		// Gateway API on or off re-engages the cluster, so its cache never watches a kind it
		// should not (nothing is uninstalled: CRDs stay for whoever uses them).
		err = r.Registry.Engage(req.NamespacedName, kc, clusteraccess.Settings{GatewayAPI: ci.Spec.GatewayAPIOn()})
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
	name := ci.Spec.ClusterRef.Name
	p := r.Sources.For(ci.Spec.ClusterRef.Kind)
	if p == nil {
		return nil, v1alpha1.ReasonKubeconfigMissing, fmt.Errorf("unknown cluster source kind %q", ci.Spec.ClusterRef.Kind)
	}
	if !sources.Available(p) {
		return nil, v1alpha1.ReasonKubeconfigMissing, fmt.Errorf(
			"cluster %s is a %s, but %s has not been found in the seed (yet)", name, p.Description(), p.Discovery().Name)
	}
	key, err := p.KubeconfigSecret(ctx, r.Client, ci.Namespace, name)
	if err != nil {
		if u, ok := errors.AsType[*sources.Unengageable](err); ok {
			return nil, u.Reason, u
		}
		return nil, "", err
	}
	secrets := r.UnwatchedSecrets
	if p.KubeconfigWatched() {
		secrets = r.KubeconfigSecrets
	}
	return getSecret(ctx, secrets, key.Namespace, key.Name)
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
