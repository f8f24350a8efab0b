package lifecycle

import (
	"maps"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// MetadataOrSpecChanged passes ClusterIngress updates that change the spec (generation),
// deletion, finalizers or annotations: what the lifecycle and engagement controllers decide
// from. Status writes, the DNS controller's many among them, wake neither.
var MetadataOrSpecChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld, e.ObjectNew
		if o == nil || n == nil {
			return true
		}
		return o.GetGeneration() != n.GetGeneration() || !o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp()) ||
			!slices.Equal(o.GetFinalizers(), n.GetFinalizers()) || !maps.Equal(o.GetAnnotations(), n.GetAnnotations())
	},
}
