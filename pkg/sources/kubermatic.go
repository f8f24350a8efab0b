package sources

import (
	"context"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/apidiscovery"
)

// Kubermatic seeds: a user cluster is a kubermatic.k8c.io/v1 Cluster (cluster-scoped) whose
// control plane lives in the seed namespace status.namespaceName (cluster-<name>), with the admin
// kubeconfig reachable from inside the seed in the Secret internal-admin-kubeconfig (key
// "kubeconfig"). Only the fields Shardgate reads are declared; it never writes a Kubermatic
// object. The kubeconfig Secret is read by name, like Cluster API's.
// +kubebuilder:rbac:groups=kubermatic.k8c.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// KubermaticGroupVersion is Kubermatic's API.
var KubermaticGroupVersion = schema.GroupVersion{Group: "kubermatic.k8c.io", Version: "v1"}

// KubermaticKubeconfigSecret is the Secret in the cluster's namespace with the kubeconfig that
// works from inside the seed (admin-kubeconfig holds the external address).
const KubermaticKubeconfigSecret = "internal-admin-kubeconfig"

// KubermaticHealthUp is the health Kubermatic reports for a working API server.
const KubermaticHealthUp = "HealthStatusUp"

// KubermaticCluster is the part of a Kubermatic Cluster Shardgate reads.
type KubermaticCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              KubermaticClusterSpec   `json:"spec,omitempty"`
	Status            KubermaticClusterStatus `json:"status,omitempty"`
}

// KubermaticClusterSpec: pause stops Kubermatic's controllers, and Shardgate's decisions about
// the cluster.
type KubermaticClusterSpec struct {
	Pause bool `json:"pause,omitempty"`
}

// KubermaticClusterStatus: where the control plane lives and whether its API server is healthy.
type KubermaticClusterStatus struct {
	NamespaceName  string                  `json:"namespaceName,omitempty"`
	ExtendedHealth KubermaticClusterHealth `json:"extendedHealth,omitempty"`
}

// KubermaticClusterHealth is the API server's health.
type KubermaticClusterHealth struct {
	Apiserver string `json:"apiserver,omitempty"`
}

// KubermaticClusterList is a list of Kubermatic Clusters.
type KubermaticClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KubermaticCluster `json:"items"`
}

// DeepCopyObject implements runtime.Object.
func (c *KubermaticCluster) DeepCopyObject() runtime.Object {
	out := *c
	c.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

// DeepCopyObject implements runtime.Object.
func (l *KubermaticClusterList) DeepCopyObject() runtime.Object {
	out := &KubermaticClusterList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	for i := range l.Items {
		out.Items = append(out.Items, *l.Items[i].DeepCopyObject().(*KubermaticCluster))
	}
	return out
}

// AddKubermaticToScheme registers the Cluster kinds Shardgate reads.
func AddKubermaticToScheme(s *runtime.Scheme) error {
	s.AddKnownTypeWithName(KubermaticGroupVersion.WithKind("Cluster"), &KubermaticCluster{})
	s.AddKnownTypeWithName(KubermaticGroupVersion.WithKind("ClusterList"), &KubermaticClusterList{})
	metav1.AddToGroupVersion(s, KubermaticGroupVersion)
	return nil
}

// FromKubermatic describes a Kubermatic Cluster: its ClusterIngress lives in the cluster's seed
// namespace under the Cluster's name; engaged once Kubermatic reports its API server up.
func FromKubermatic(c *KubermaticCluster) Source {
	return Source{
		Kind: v1alpha1.SourceKindKubermatic, Namespace: c.Status.NamespaceName, Name: c.Name, Labels: c.Labels,
		ClusterID:             clusterID(c.Name, c.Annotations),
		IgnoredVIPAnnotations: ignoredVIPAnnotations(c.Annotations),
		KubeconfigSecret:      KubermaticKubeconfigSecret,
		Initialized:           c.Status.ExtendedHealth.Apiserver == KubermaticHealthUp,
		Deleting:              c.DeletionTimestamp != nil,
		Paused:                c.Spec.Pause,
	}
}

// Kubermatic is the provider of Kubermatic Clusters.
type Kubermatic struct {
	discovery *apidiscovery.API
}

// NewKubermatic discovers Kubermatic's Clusters in the seed (like Cluster API's: watched once
// served).
func NewKubermatic(dc discovery.DiscoveryInterface, log logr.Logger) *Kubermatic {
	return &Kubermatic{discovery: &apidiscovery.API{GroupVersion: KubermaticGroupVersion.String(), Kind: "Cluster",
		Name: "Kubermatic", Meanwhile: "Kubermatic Clusters are not cluster sources until it is", Discovery: dc, Log: log}}
}

// Kind implements Provider.
func (*Kubermatic) Kind() string { return v1alpha1.SourceKindKubermatic }

// Description implements Provider.
func (*Kubermatic) Description() string { return "Kubermatic Cluster" }

// Discovery implements Provider.
func (p *Kubermatic) Discovery() *apidiscovery.API { return p.discovery }

// AddToScheme implements Provider.
func (*Kubermatic) AddToScheme(s *runtime.Scheme) error { return AddKubermaticToScheme(s) }

// Watch implements Provider.
func (*Kubermatic) Watch() *Watch {
	return &Watch{Object: &KubermaticCluster{}, List: &KubermaticClusterList{}, Key: kubermaticKey}
}

// kubermaticKey is a Kubermatic Cluster's ClusterIngress key: the cluster's seed namespace and
// its name; none before Kubermatic has given it a namespace.
func kubermaticKey(o client.Object) (types.NamespacedName, bool) {
	kc, ok := o.(*KubermaticCluster)
	if !ok || kc.Status.NamespaceName == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: kc.Status.NamespaceName, Name: kc.Name}, true
}

// Get implements Provider: the Cluster is cluster-scoped, and the key's only while it lives in
// the key's namespace.
func (*Kubermatic) Get(ctx context.Context, c client.Reader, key types.NamespacedName) (Source, bool, error) {
	kc := &KubermaticCluster{}
	if err := c.Get(ctx, types.NamespacedName{Name: key.Name}, kc); err != nil {
		return Source{}, false, client.IgnoreNotFound(err)
	}
	if kc.Status.NamespaceName != key.Namespace {
		return Source{}, false, nil
	}
	return FromKubermatic(kc), true, nil
}

// KubeconfigSecret implements Provider: internal-admin-kubeconfig in the cluster's namespace,
// once Kubermatic reports its API server up.
func (*Kubermatic) KubeconfigSecret(ctx context.Context, c client.Reader, namespace, name string) (
	types.NamespacedName, error,
) {
	kc := &KubermaticCluster{}
	if err := c.Get(ctx, types.NamespacedName{Name: name}, kc); err != nil {
		if apierrors.IsNotFound(err) {
			return types.NamespacedName{}, unengageable(v1alpha1.ReasonKubeconfigMissing,
				"kubermatic Cluster %s not found", name)
		}
		return types.NamespacedName{}, err
	}
	src := FromKubermatic(kc)
	if src.Namespace != namespace {
		return types.NamespacedName{}, unengageable(v1alpha1.ReasonKubeconfigMissing,
			"kubermatic Cluster %s lives in namespace %q, not %s", kc.Name, src.Namespace, namespace)
	}
	if !src.Initialized {
		return types.NamespacedName{}, unengageable(v1alpha1.ReasonControlPlaneNotReady,
			"kubermatic Cluster %s: its API server is not healthy yet", kc.Name)
	}
	return types.NamespacedName{Namespace: namespace, Name: src.KubeconfigSecret}, nil
}

// KubeconfigWatched implements Provider: Kubermatic's Secret is not labelled for the cache.
func (*Kubermatic) KubeconfigWatched() bool { return false }
