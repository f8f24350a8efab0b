package allocation

import (
	"slices"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/pkg/render/flavourtest"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// guardedFake is flavourtest's flavour with an annotation its routers read as shared configuration.
type guardedFake struct{ flavourtest.Fake }

func (guardedFake) TenantGuards() render.TenantGuards {
	return render.TenantGuards{Annotations: []string{"review31b-shared"}}
}

// TestReview31bRegisteredFlavoursAnnotationsAreTrimmed (review31b, tenant T; registration): the
// names allocation refuses come from the flavour registry (render.ReadsAnnotations through
// FlavourFor, builtin plus render.Register), but the Ingress cache keeps only those render's init()
// copied from builtin. A flavour registered any other way (render.Register, "code works with a
// flavour it was not written for") gets a shard whose ReadsAnnotations names the annotation while
// the cache has already dropped it: allocation never sees it and the route is served. Two lists of
// the same fact; the init() is also the only thing keeping pkg/routekinds (and its tests, which
// cannot import render) from trimming every such annotation.
// Expected: whatever ReadsAnnotations can return, the cache keeps (one source of truth, e.g.
// trimIngress asking the registry, or Register calling KeepSharedConfigAnnotations).
func TestReview31bRegisteredFlavoursAnnotationsAreTrimmed(t *testing.T) {
	t.Cleanup(render.Register(guardedFake{}))
	if reads := render.ReadsAnnotations(v1alpha1.ShardSpec{Name: "s", Flavour: flavourtest.Name}); !slices.Contains(reads, "review31b-shared") {
		t.Fatalf("ReadsAnnotations = %v", reads)
	}
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "i",
		Annotations: map[string]string{"x.example/review31b-shared": "v"}}}
	out, err := routekinds.Ingress{}.Cached()[0].Transform(ing)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := out.(*networkingv1.Ingress).Annotations["x.example/review31b-shared"]; !ok {
		t.Errorf("a shard of flavour %s refuses routes carrying review31b-shared, but the cache dropped it: %v",
			flavourtest.Name, out.(*networkingv1.Ingress).Annotations)
	}
}
