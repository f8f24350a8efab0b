package usercluster

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// Source is a user cluster as the seed describes it: a Cluster API Cluster (with its
// <name>-kubeconfig Secret) or a Secret labelled shardgate.io/kubeconfig.
type Source struct {
	Kind      string // v1alpha1.SourceKindCluster or v1alpha1.SourceKindSecret
	Namespace string
	Name      string
	UID       string
	Labels    map[string]string
	Created   metav1.Time
	// ClusterID requested: the shardgate.io/cluster-id annotation, else the name.
	ClusterID string
	// KubeconfigSecret is the name of the Secret holding the kubeconfig.
	KubeconfigSecret string
	// Initialized is false while a Cluster's control plane cannot take requests yet.
	Initialized bool
	Deleting    bool
}

// FromCluster describes a Cluster API Cluster.
func FromCluster(c *clusterv1.Cluster) Source {
	return Source{
		Kind: v1alpha1.SourceKindCluster, Namespace: c.Namespace, Name: c.Name, UID: string(c.UID),
		Labels: c.Labels, Created: c.CreationTimestamp,
		ClusterID:        clusterID(c.Name, c.Annotations),
		KubeconfigSecret: c.Name + "-kubeconfig",
		Initialized:      controlPlaneInitialized(c),
		Deleting:         c.DeletionTimestamp != nil,
	}
}

// FromSecret describes a kubeconfig Secret (label shardgate.io/kubeconfig).
func FromSecret(s *corev1.Secret) Source {
	return Source{
		Kind: v1alpha1.SourceKindSecret, Namespace: s.Namespace, Name: s.Name, UID: string(s.UID),
		Labels: s.Labels, Created: s.CreationTimestamp,
		ClusterID:        clusterID(s.Name, s.Annotations),
		KubeconfigSecret: s.Name,
		Initialized:      true,
		Deleting:         s.DeletionTimestamp != nil,
	}
}

func clusterID(name string, annotations map[string]string) string {
	if id, ok := annotations[v1alpha1.ClusterIDAnnotation]; ok {
		return strings.TrimSpace(id)
	}
	return name
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
// takes a cluster away from the one it has. nil when none matches.
func SelectProfile(profiles []v1alpha1.IngressProfile, clusterLabels map[string]string) *v1alpha1.IngressProfile {
	var matching []*v1alpha1.IngressProfile
	for i := range profiles {
		p := &profiles[i]
		if p.DeletionTimestamp != nil {
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

// ResolveDNS returns the profile's DNS settings with defaults filled in (zone from the
// controller's --dns-zone when unset).
func ResolveDNS(p *v1alpha1.IngressProfile, defaultZone string) v1alpha1.DNSSettings {
	d := *p.Spec.DNS.DeepCopy()
	if d.Zone == "" {
		d.Zone = defaultZone
	}
	if d.TTL == 0 {
		d.TTL = 60
	}
	if len(d.AddressTypes) == 0 {
		d.AddressTypes = []v1alpha1.NodeAddressType{v1alpha1.ExternalIP, v1alpha1.InternalIP}
	}
	if len(d.IPFamilies) == 0 {
		d.IPFamilies = []v1alpha1.IPFamily{v1alpha1.IPv4, v1alpha1.IPv6}
	}
	if d.EmptyTargets == "" {
		d.EmptyTargets = v1alpha1.EmptyTargetsKeepLast
	}
	return d
}

// ValidateProfile returns what is wrong with a profile's selectors (the zone is checked with the
// default applied, by the DNS controller).
func ValidateProfile(p *v1alpha1.IngressProfile) field.ErrorList {
	var errs field.ErrorList
	if _, err := metav1.LabelSelectorAsSelector(&p.Spec.ClusterSelector); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("spec", "clusterSelector"), p.Spec.ClusterSelector, err.Error()))
	}
	if s := p.Spec.DNS.IngressNodeSelector; s != nil {
		if _, err := metav1.LabelSelectorAsSelector(s); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("spec", "dns", "ingressNodeSelector"), s, err.Error()))
		}
	}
	return errs
}
