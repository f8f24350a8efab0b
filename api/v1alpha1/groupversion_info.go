// Package v1alpha1 holds Shardgate's API: IngressProfile (what a seed operator sets once) and
// ClusterIngress (one per selected user cluster, its resolved settings and status).
// +kubebuilder:object:generate=true
// +groupName=shardgate.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of Shardgate's types.
	GroupVersion = schema.GroupVersion{Group: "shardgate.io", Version: "v1alpha1"}
	// SchemeBuilder registers the types (an api package depends on apimachinery only).
	SchemeBuilder = runtime.NewSchemeBuilder(func(s *runtime.Scheme) error {
		metav1.AddToGroupVersion(s, GroupVersion)
		return nil
	})
	// AddToScheme adds the types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// register adds objects to the group version's known types.
func register(objs ...runtime.Object) {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, objs...)
		return nil
	})
}
