package usercluster

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// metaOnly is the object carried by engager events: only its namespace and name (the
// ClusterIngress key) matter to the handlers.
type metaOnly struct {
	metav1.TypeMeta
	metav1.ObjectMeta
}

func (m *metaOnly) DeepCopyObject() runtime.Object {
	out := &metaOnly{TypeMeta: m.TypeMeta}
	m.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return out
}
