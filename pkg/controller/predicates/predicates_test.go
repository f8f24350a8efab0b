package predicates

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

func TestPredicates(t *testing.T) {
	base := func() *v1alpha1.ClusterIngress {
		return &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Generation: 1, Finalizers: []string{"a"}, Annotations: map[string]string{"k": "v"}},
			Status: v1alpha1.ClusterIngressStatus{Domain: "c1.z"}}
	}
	now := metav1.Now()
	for _, tt := range []struct {
		name          string
		mutate        func(*v1alpha1.ClusterIngress)
		metadata, dom bool
	}{
		{"status only", func(c *v1alpha1.ClusterIngress) { c.Status.Routes = 3 }, false, false},
		{"spec", func(c *v1alpha1.ClusterIngress) { c.Generation++ }, true, false},
		{"deletion", func(c *v1alpha1.ClusterIngress) { c.DeletionTimestamp = &now }, true, false},
		{"finalizer", func(c *v1alpha1.ClusterIngress) { c.Finalizers = nil }, true, false},
		{"annotation", func(c *v1alpha1.ClusterIngress) { c.Annotations["k"] = "w" }, true, false},
		{"domain", func(c *v1alpha1.ClusterIngress) { c.Status.Domain = "c2.z" }, false, true},
	} {
		n := base()
		tt.mutate(n)
		e := event.UpdateEvent{ObjectOld: base(), ObjectNew: n}
		if got := MetadataOrSpecChanged.Update(e); got != tt.metadata {
			t.Errorf("%s: MetadataOrSpecChanged %v", tt.name, got)
		}
		if got := DomainChanged.Update(e); got != tt.dom {
			t.Errorf("%s: DomainChanged %v", tt.name, got)
		}
	}
}
