package sources

import (
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// Source is a user cluster as the seed describes it, whatever its kind: a Cluster API Cluster
// (with its <name>-kubeconfig Secret), a Kubermatic Cluster (with internal-admin-kubeconfig in
// its namespace), a Secret labelled shardgate.io/kubeconfig, or what another Provider describes.
type Source struct {
	Kind      string // its Provider's Kind
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
