package sources

import (
	"reflect"
	"testing"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

func capiCluster(initialized bool, edit ...func(*clusterv1.Cluster)) *clusterv1.Cluster {
	c := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c1",
		Labels: map[string]string{"env": "prod"}}}
	if initialized {
		c.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
	}
	for _, e := range edit {
		e(c)
	}
	return c
}

func TestFromCluster(t *testing.T) {
	deleting := metav1.Now()
	tests := []struct {
		name string
		c    *clusterv1.Cluster
		want Source
	}{
		{"uninitialized, cluster ID annotated", capiCluster(false, func(c *clusterv1.Cluster) {
			c.Annotations = map[string]string{v1alpha1.ClusterIDAnnotation: " prod-1 "}
		}), Source{Kind: v1alpha1.SourceKindCluster, Namespace: "ns", Name: "c1", Labels: map[string]string{"env": "prod"},
			ClusterID: "prod-1", KubeconfigSecret: "c1-kubeconfig"}},
		{"initialization.controlPlaneInitialized", capiCluster(true), Source{Kind: v1alpha1.SourceKindCluster,
			Namespace: "ns", Name: "c1", Labels: map[string]string{"env": "prod"}, ClusterID: "c1",
			KubeconfigSecret: "c1-kubeconfig", Initialized: true}},
		{"ControlPlaneInitialized condition, being deleted", capiCluster(false, func(c *clusterv1.Cluster) {
			c.Status.Conditions = []metav1.Condition{
				{Type: clusterv1.ClusterControlPlaneInitializedCondition, Status: metav1.ConditionTrue}}
			c.DeletionTimestamp = &deleting
		}), Source{Kind: v1alpha1.SourceKindCluster, Namespace: "ns", Name: "c1", Labels: map[string]string{"env": "prod"},
			ClusterID: "c1", KubeconfigSecret: "c1-kubeconfig", Initialized: true, Deleting: true}},
		{"VIP annotations named, not read", capiCluster(true, func(c *clusterv1.Cluster) {
			c.Annotations = map[string]string{v1alpha1.L2DomainAnnotation: "rack-7"}
		}), Source{Kind: v1alpha1.SourceKindCluster, Namespace: "ns", Name: "c1", Labels: map[string]string{"env": "prod"},
			ClusterID: "c1", KubeconfigSecret: "c1-kubeconfig", Initialized: true,
			IgnoredVIPAnnotations: []string{v1alpha1.L2DomainAnnotation}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FromCluster(tt.c); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("%+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestClusterAPIProvider(t *testing.T) {
	p := NewClusterAPI(nil, logr.Discard())
	if p.Kind() != v1alpha1.SourceKindCluster || p.KubeconfigWatched() || Available(p) {
		t.Fatalf("kind %s, kubeconfig watched %v, available before discovery %v",
			p.Kind(), p.KubeconfigWatched(), Available(p))
	}
	key := types.NamespacedName{Namespace: "ns", Name: "c1"}
	src := FromCluster(capiCluster(true))
	testGet(t, p, []getCase{
		{"none", nil, key, nil},
		{"the Cluster of the key", []client.Object{capiCluster(true)}, key, &src},
		{"another namespace's", []client.Object{capiCluster(true)}, types.NamespacedName{Namespace: "other", Name: "c1"}, nil},
	})
	testKubeconfigSecret(t, p, []kubeconfigCase{
		{"no Cluster", nil, "ns", "c1", types.NamespacedName{},
			v1alpha1.ReasonKubeconfigMissing, "cluster API Cluster ns/c1 not found"},
		{"control plane not initialized", []client.Object{capiCluster(false)}, "ns", "c1", types.NamespacedName{},
			v1alpha1.ReasonControlPlaneNotReady, "cluster API Cluster ns/c1: control plane not initialized yet"},
		{"<name>-kubeconfig beside it", []client.Object{capiCluster(true)}, "ns", "c1",
			types.NamespacedName{Namespace: "ns", Name: "c1-kubeconfig"}, "", ""},
	})
	testKey(t, p, []keyCase{{"its own key", capiCluster(false), key, true}})
}
