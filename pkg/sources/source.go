package sources

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// Source is a user cluster as the seed describes it: a Cluster API Cluster (with its
// <name>-kubeconfig Secret), a Kubermatic Cluster (with internal-admin-kubeconfig in its
// namespace) or a Secret labelled shardgate.io/kubeconfig.
type Source struct {
	Kind      string // v1alpha1.SourceKindCluster, SourceKindKubermatic or SourceKindSecret
	Namespace string
	Name      string
	Labels    map[string]string
	// ClusterID requested: the shardgate.io/cluster-id annotation, else the name.
	ClusterID string
	// IgnoredVIPAnnotations are the annotations earlier versions took a VIP pool and L2 domain
	// from that the source still carries: never read (whoever writes a source would pick a pool
	// or domain), only named so their users learn why (SourceAvailable's message).
	IgnoredVIPAnnotations []string
	// KubeconfigSecret is the name of the Secret holding the kubeconfig.
	KubeconfigSecret string
	// Initialized is false while a Cluster's control plane cannot take requests yet.
	Initialized bool
	Deleting    bool
	// Paused: the source asks that nothing be decided about the cluster (Kubermatic's
	// spec.pause): its ClusterIngress is neither created, changed nor removed meanwhile.
	Paused bool
}

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

func clusterID(name string, annotations map[string]string) string {
	if id, ok := annotations[v1alpha1.ClusterIDAnnotation]; ok {
		return strings.TrimSpace(id)
	}
	return name
}

func ignoredVIPAnnotations(annotations map[string]string) []string {
	var out []string
	for _, a := range []string{v1alpha1.VIPPoolAnnotation, v1alpha1.L2DomainAnnotation} {
		if _, ok := annotations[a]; ok {
			out = append(out, a)
		}
	}
	return out
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

// SelectProfile returns the profile in force for a cluster with these labels: among the valid
// profiles whose clusterSelector matches, the oldest (then by name), so adding a profile never
// takes a cluster away from the one it has. An invalid profile takes no cluster. nil when none
// matches.
func SelectProfile(profiles []v1alpha1.IngressProfile, invalid map[string]bool, clusterLabels map[string]string) *v1alpha1.IngressProfile {
	var matching []*v1alpha1.IngressProfile
	for i := range profiles {
		p := &profiles[i]
		if p.DeletionTimestamp != nil || invalid[p.Name] {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(&p.Spec.ClusterSelector)
		if err != nil || !sel.Matches(labels.Set(clusterLabels)) {
			continue
		}
		matching = append(matching, p)
	}
	if len(matching) == 0 {
		return nil
	}
	return slices.MinFunc(matching, func(a, b *v1alpha1.IngressProfile) int {
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			if a.CreationTimestamp.Before(&b.CreationTimestamp) {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
}
