// Package v1alpha1 holds Shardgate's API: IngressProfile (what a seed operator sets once) and
// ClusterIngress (one per selected user cluster, its resolved settings and status).
// +kubebuilder:object:generate=true
// +groupName=shardgate.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of Shardgate's types.
	GroupVersion = schema.GroupVersion{Group: "shardgate.io", Version: "v1alpha1"}
	// SchemeBuilder registers the types.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}
	// AddToScheme adds the types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
