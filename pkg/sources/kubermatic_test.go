package sources

import (
	"reflect"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

func kkpCluster(namespace, health string, edit ...func(*KubermaticCluster)) *KubermaticCluster {
	c := &KubermaticCluster{ObjectMeta: metav1.ObjectMeta{Name: "kkp1", Labels: map[string]string{"a": "b"}},
		Status: KubermaticClusterStatus{NamespaceName: namespace, ExtendedHealth: KubermaticClusterHealth{Apiserver: health}}}
	for _, e := range edit {
		e(c)
	}
	return c
}

func TestFromKubermatic(t *testing.T) {
	kkpSource := func(initialized, paused bool) Source {
		return Source{Kind: v1alpha1.SourceKindKubermatic, Namespace: "cluster-kkp1", Name: "kkp1",
			Labels: map[string]string{"a": "b"}, ClusterID: "kkp1", KubeconfigSecret: "internal-admin-kubeconfig",
			Initialized: initialized, Paused: paused}
	}
	tests := []struct {
		name string
		c    *KubermaticCluster
		want Source
	}{
		{"provisioning", kkpCluster("cluster-kkp1", "HealthStatusProvisioning"), kkpSource(false, false)},
		{"healthy, paused", kkpCluster("cluster-kkp1", KubermaticHealthUp, func(c *KubermaticCluster) { c.Spec.Pause = true }),
			kkpSource(true, true)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FromKubermatic(tt.c); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("%+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestKubermaticProvider(t *testing.T) {
	p := NewKubermatic(nil, logr.Discard())
	if p.Kind() != v1alpha1.SourceKindKubermatic || p.KubeconfigWatched() || Available(p) {
		t.Fatalf("kind %s, kubeconfig watched %v, available before discovery %v",
			p.Kind(), p.KubeconfigWatched(), Available(p))
	}
	key := types.NamespacedName{Namespace: "cluster-kkp1", Name: "kkp1"}
	healthy := kkpCluster("cluster-kkp1", KubermaticHealthUp)
	src := FromKubermatic(healthy)
	testGet(t, p, []getCase{
		{"none", nil, key, nil},
		{"the Cluster of the key, cluster-scoped", []client.Object{healthy}, key, &src},
		{"a Cluster living in another namespace", []client.Object{healthy},
			types.NamespacedName{Namespace: "ns", Name: "kkp1"}, nil},
		{"a Cluster without a namespace yet", []client.Object{kkpCluster("", "")}, key, nil},
	})
	testKubeconfigSecret(t, p, []kubeconfigCase{
		{"no Cluster", nil, "cluster-kkp1", "kkp1", types.NamespacedName{},
			v1alpha1.ReasonKubeconfigMissing, "kubermatic Cluster kkp1 not found"},
		{"in another namespace", []client.Object{healthy}, "ns", "kkp1", types.NamespacedName{},
			v1alpha1.ReasonKubeconfigMissing, `kubermatic Cluster kkp1 lives in namespace "cluster-kkp1", not ns`},
		{"API server not up", []client.Object{kkpCluster("cluster-kkp1", "HealthStatusDown")}, "cluster-kkp1", "kkp1",
			types.NamespacedName{}, v1alpha1.ReasonControlPlaneNotReady,
			"kubermatic Cluster kkp1: its API server is not healthy yet"},
		{"internal-admin-kubeconfig in its namespace", []client.Object{healthy}, "cluster-kkp1", "kkp1",
			types.NamespacedName{Namespace: "cluster-kkp1", Name: KubermaticKubeconfigSecret}, "", ""},
	})
	testKey(t, p, []keyCase{
		{"its seed namespace and name", healthy, key, true},
		{"none before Kubermatic gives it a namespace", kkpCluster("", ""), types.NamespacedName{}, false},
		{"not a Kubermatic Cluster", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "x"}},
			types.NamespacedName{}, false},
	})
}
