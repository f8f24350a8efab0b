package sources

import (
	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/apidiscovery"
)

// Kubermatic seeds: a user cluster is a kubermatic.k8c.io/v1 Cluster (cluster-scoped) whose
// control plane lives in the seed namespace status.namespaceName (cluster-<name>), with the admin
// kubeconfig reachable from inside the seed in the Secret internal-admin-kubeconfig (key
// "kubeconfig"). Only the fields Shardgate reads are declared; it never writes a Kubermatic
// object.

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

// NewKubermatic discovers Kubermatic's Clusters in the seed (like Cluster API's: watched once
// served).
func NewKubermatic(dc discovery.DiscoveryInterface, log logr.Logger) *apidiscovery.API {
	return &apidiscovery.API{GroupVersion: KubermaticGroupVersion.String(), Kind: "Cluster", Name: "Kubermatic",
		Meanwhile: "Kubermatic Clusters are not cluster sources until it is", Discovery: dc, Log: log}
}
