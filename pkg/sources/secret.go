package sources

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/apidiscovery"
)

// Kubeconfig Secrets: any seed, no cluster manager needed. A Secret labelled
// shardgate.io/kubeconfig in a namespace the operator listed (--kubeconfig-secret-namespaces) is a
// user cluster; it is its own kubeconfig Secret, and its ClusterIngress has its namespace and
// name. Secrets are listed and watched only in those namespaces, granted there by the chart's
// Roles (see docs/security.md), and cached only with the label (KubeconfigSecretCache).

// KubeconfigSecrets is the provider of kubeconfig Secrets.
type KubeconfigSecrets struct {
	namespaces map[string]bool
}

// NewKubeconfigSecrets registers clusters from kubeconfig Secrets in namespaces; none when there
// is none (an empty list of namespaces would mean all to a cache or a watch).
func NewKubeconfigSecrets(namespaces []string) *KubeconfigSecrets {
	p := &KubeconfigSecrets{namespaces: map[string]bool{}}
	for _, ns := range namespaces {
		p.namespaces[ns] = true
	}
	return p
}

// Kind implements Provider.
func (*KubeconfigSecrets) Kind() string { return v1alpha1.SourceKindSecret }

// Description implements Provider.
func (*KubeconfigSecrets) Description() string { return "kubeconfig Secret" }

// Discovery implements Provider: Secrets are always served.
func (*KubeconfigSecrets) Discovery() *apidiscovery.API { return nil }

// AddToScheme implements Provider: Secrets are in client-go's scheme.
func (*KubeconfigSecrets) AddToScheme(*runtime.Scheme) error { return nil }

// Watch implements Provider: nothing without namespaces.
func (p *KubeconfigSecrets) Watch() *Watch {
	if len(p.namespaces) == 0 {
		return nil
	}
	return &Watch{Object: &corev1.Secret{}, List: &corev1.SecretList{}, Key: ObjectKey,
		Predicates:  []predicate.Predicate{hasLabel(v1alpha1.KubeconfigSecretLabel)},
		ListOptions: []client.ListOption{client.HasLabels{v1alpha1.KubeconfigSecretLabel}}}
}

// Get implements Provider: a labelled Secret in a listed namespace (the cache holds no other).
func (p *KubeconfigSecrets) Get(ctx context.Context, c client.Reader, key types.NamespacedName) (Source, bool, error) {
	if !p.namespaces[key.Namespace] {
		return Source{}, false, nil
	}
	s := &corev1.Secret{}
	if err := c.Get(ctx, key, s); err != nil {
		return Source{}, false, client.IgnoreNotFound(err)
	}
	if _, ok := s.Labels[v1alpha1.KubeconfigSecretLabel]; !ok {
		return Source{}, false, nil
	}
	return FromSecret(s), true, nil
}

// KubeconfigSecret implements Provider: the source itself, in a listed namespace.
func (p *KubeconfigSecrets) KubeconfigSecret(_ context.Context, _ client.Reader, namespace, name string) (
	types.NamespacedName, error,
) {
	if !p.namespaces[namespace] {
		return types.NamespacedName{}, unengageable(v1alpha1.ReasonKubeconfigMissing,
			"namespace %s is not one the controller reads kubeconfig Secrets from (--kubeconfig-secret-namespaces)", namespace)
	}
	return types.NamespacedName{Namespace: namespace, Name: name}, nil
}

// KubeconfigWatched implements Provider: the source is the kubeconfig, cached and watched.
func (*KubeconfigSecrets) KubeconfigWatched() bool { return true }

// FromSecret describes a kubeconfig Secret (label shardgate.io/kubeconfig).
func FromSecret(s *corev1.Secret) Source {
	return Source{
		Kind: v1alpha1.SourceKindSecret, Namespace: s.Namespace, Name: s.Name, Labels: s.Labels,
		ClusterID:             clusterID(s.Name, s.Annotations),
		IgnoredVIPAnnotations: ignoredVIPAnnotations(s.Annotations),
		KubeconfigSecret:      s.Name,
		Initialized:           true,
		Deleting:              s.DeletionTimestamp != nil,
	}
}

// hasLabel passes objects that carry the label key.
func hasLabel(key string) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := o.GetLabels()[key]
		return ok
	})
}

// KubeconfigSecretCache restricts the manager's Secret cache to kubeconfig Secrets in the
// namespaces the operator listed: the controller never caches the seed's other Secrets.
func KubeconfigSecretCache(namespaces []string) cache.ByObject {
	req, _ := labels.NewRequirement(v1alpha1.KubeconfigSecretLabel, selection.Exists, nil)
	nss := map[string]cache.Config{}
	for _, ns := range namespaces {
		nss[ns] = cache.Config{}
	}
	return cache.ByObject{Label: labels.NewSelector().Add(*req), Namespaces: nss}
}
