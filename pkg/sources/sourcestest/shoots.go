// Package sourcestest is a fourth kind of cluster source for tests, a Gardener Shoot played by a
// ConfigMap: registered only in tests, it shows that the lifecycle and engagement controllers
// work with a provider they were not written for.
package sourcestest

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/apidiscovery"
	"github.com/shardgate/shardgate/pkg/sources"
)

// Kind is the Shoots' ClusterReference kind. The ClusterIngress CRD's enum does not allow it: the
// tests that use it run on a fake client.
const Kind = "Shoot"

// ShootLabel marks a ConfigMap that plays a Shoot; its value is ignored.
const ShootLabel = "test.shardgate.io/shoot"

// Data keys of a Shoot's ConfigMap.
const (
	// ReadyKey "true": the Shoot's API server takes requests.
	ReadyKey = "ready"
	// KubeconfigKey names the Secret beside it with the Shoot's kubeconfig.
	KubeconfigKey = "kubeconfigSecret"
)

// Shoots is the provider: a ConfigMap labelled ShootLabel is a user cluster whose ClusterIngress
// has its namespace and name. Its API is "discovered" when a test calls Discovery().Found().
type Shoots struct {
	api apidiscovery.API
}

// NewShoots is a Shoots provider whose API has not been found yet.
func NewShoots() *Shoots { return &Shoots{api: apidiscovery.API{Name: "Gardener"}} }

// Kind implements sources.Provider.
func (*Shoots) Kind() string { return Kind }

// Description implements sources.Provider.
func (*Shoots) Description() string { return "Gardener Shoot" }

// Discovery implements sources.Provider.
func (p *Shoots) Discovery() *apidiscovery.API { return &p.api }

// AddToScheme implements sources.Provider: ConfigMaps are in client-go's scheme.
func (*Shoots) AddToScheme(*runtime.Scheme) error { return nil }

// Watch implements sources.Provider.
func (*Shoots) Watch() *sources.Watch {
	isShoot := func(o client.Object) bool { _, ok := o.GetLabels()[ShootLabel]; return ok }
	return &sources.Watch{Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{},
		Predicates:  []predicate.Predicate{predicate.NewPredicateFuncs(isShoot)},
		ListOptions: []client.ListOption{client.HasLabels{ShootLabel}}, Key: sources.ObjectKey}
}

// Get implements sources.Provider.
func (*Shoots) Get(ctx context.Context, c client.Reader, key types.NamespacedName) (sources.Source, bool, error) {
	cm, err := shoot(ctx, c, key)
	if cm == nil {
		return sources.Source{}, false, err
	}
	return sources.Source{Kind: Kind, Namespace: cm.Namespace, Name: cm.Name, Labels: cm.Labels, ClusterID: cm.Name,
		KubeconfigSecret: cm.Data[KubeconfigKey], Initialized: cm.Data[ReadyKey] == "true",
		Deleting: cm.DeletionTimestamp != nil}, true, nil
}

// KubeconfigSecret implements sources.Provider.
func (p *Shoots) KubeconfigSecret(ctx context.Context, c client.Reader, namespace, name string) (
	types.NamespacedName, error,
) {
	src, found, err := p.Get(ctx, c, types.NamespacedName{Namespace: namespace, Name: name})
	switch {
	case err != nil:
		return types.NamespacedName{}, err
	case !found:
		return types.NamespacedName{}, &sources.Unengageable{Reason: v1alpha1.ReasonKubeconfigMissing,
			Message: "no such Shoot"}
	case !src.Initialized:
		return types.NamespacedName{}, &sources.Unengageable{Reason: v1alpha1.ReasonControlPlaneNotReady,
			Message: "Shoot not ready"}
	}
	return types.NamespacedName{Namespace: namespace, Name: src.KubeconfigSecret}, nil
}

// KubeconfigWatched implements sources.Provider: read by name and resynced.
func (*Shoots) KubeconfigWatched() bool { return false }

func shoot(ctx context.Context, c client.Reader, key types.NamespacedName) (*corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, key, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	if _, ok := cm.Labels[ShootLabel]; !ok {
		return nil, nil
	}
	return cm, nil
}
