package sources

import (
	"context"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/apidiscovery"
)

// Cluster API seeds: a user cluster is a cluster.x-k8s.io/v1beta2 Cluster, its ClusterIngress
// has the Cluster's namespace and name, and its kubeconfig is the Secret <name>-kubeconfig
// beside it, read by name (Secrets get: the controller never lists the Secrets Cluster API keeps
// there, such as CA, etcd and service-account keys).
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// ClusterAPI is the provider of Cluster API Clusters.
type ClusterAPI struct {
	discovery *apidiscovery.API
}

// NewClusterAPI discovers Cluster API's v1beta2 Clusters in the seed: until they are served,
// only the other kinds are cluster sources, and ClusterIngresses of Cluster sources are kept as
// they are.
func NewClusterAPI(dc discovery.DiscoveryInterface, log logr.Logger) *ClusterAPI {
	return &ClusterAPI{discovery: &apidiscovery.API{GroupVersion: clusterv1.GroupVersion.String(), Kind: "Cluster",
		Name: "Cluster API", Meanwhile: "only kubeconfig Secrets are cluster sources until it is", Discovery: dc, Log: log}}
}

// Kind implements Provider.
func (*ClusterAPI) Kind() string { return v1alpha1.SourceKindCluster }

// Description implements Provider.
func (*ClusterAPI) Description() string { return "Cluster API Cluster" }

// Discovery implements Provider.
func (p *ClusterAPI) Discovery() *apidiscovery.API { return p.discovery }

// AddToScheme implements Provider.
func (*ClusterAPI) AddToScheme(s *runtime.Scheme) error { return clusterv1.AddToScheme(s) }

// Watch implements Provider.
func (*ClusterAPI) Watch() *Watch {
	return &Watch{Object: &clusterv1.Cluster{}, List: &clusterv1.ClusterList{}, Key: ObjectKey}
}

// Get implements Provider.
func (*ClusterAPI) Get(ctx context.Context, c client.Reader, key types.NamespacedName) (Source, bool, error) {
	cl := &clusterv1.Cluster{}
	if err := c.Get(ctx, key, cl); err != nil {
		return Source{}, false, client.IgnoreNotFound(err)
	}
	return FromCluster(cl), true, nil
}

// KubeconfigSecret implements Provider: <name>-kubeconfig, once the control plane is initialized.
func (*ClusterAPI) KubeconfigSecret(ctx context.Context, c client.Reader, namespace, name string) (
	types.NamespacedName, error,
) {
	cl := &clusterv1.Cluster{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, cl); err != nil {
		if apierrors.IsNotFound(err) {
			return types.NamespacedName{}, unengageable(v1alpha1.ReasonKubeconfigMissing,
				"cluster API Cluster %s/%s not found", namespace, name)
		}
		return types.NamespacedName{}, err
	}
	src := FromCluster(cl)
	if !src.Initialized {
		return types.NamespacedName{}, unengageable(v1alpha1.ReasonControlPlaneNotReady,
			"cluster API Cluster %s/%s: control plane not initialized yet", namespace, cl.Name)
	}
	return types.NamespacedName{Namespace: namespace, Name: src.KubeconfigSecret}, nil
}

// KubeconfigWatched implements Provider: Cluster API's Secret is not labelled for the cache.
func (*ClusterAPI) KubeconfigWatched() bool { return false }

// FromCluster describes a Cluster API Cluster.
func FromCluster(c *clusterv1.Cluster) Source {
	return Source{
		Kind: v1alpha1.SourceKindCluster, Namespace: c.Namespace, Name: c.Name, Labels: c.Labels,
		ClusterID:             clusterID(c.Name, c.Annotations),
		IgnoredVIPAnnotations: ignoredVIPAnnotations(c.Annotations),
		KubeconfigSecret:      c.Name + "-kubeconfig",
		Initialized:           controlPlaneInitialized(c),
		Deleting:              c.DeletionTimestamp != nil,
	}
}

func controlPlaneInitialized(c *clusterv1.Cluster) bool {
	if c.Status.Initialization.ControlPlaneInitialized != nil && *c.Status.Initialization.ControlPlaneInitialized {
		return true
	}
	for _, cond := range c.Status.Conditions {
		if cond.Type == clusterv1.ClusterControlPlaneInitializedCondition && cond.Status == metav1.ConditionTrue {
			return true
		}
	}
	return false
}
