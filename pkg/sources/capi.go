package sources

import (
	"github.com/go-logr/logr"
	"k8s.io/client-go/discovery"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/shardgate/shardgate/pkg/apidiscovery"
)

// NewClusterAPI discovers Cluster API's v1beta2 Clusters in the seed: until they are served,
// only kubeconfig Secrets are cluster sources, and ClusterIngresses of Cluster sources are kept
// as they are.
func NewClusterAPI(dc discovery.DiscoveryInterface, log logr.Logger) *apidiscovery.API {
	return &apidiscovery.API{GroupVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: "Cluster API",
		Meanwhile: "only kubeconfig Secrets are cluster sources until it is", Discovery: dc, Log: log}
}
