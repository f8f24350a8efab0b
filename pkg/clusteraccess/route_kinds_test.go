package clusteraccess

import (
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/shardgate/shardgate/pkg/routekinds"
	"github.com/shardgate/shardgate/pkg/routekinds/routekindstest"
)

// TestASecondKindIsCached: a route kind the cache was not written for, registered only here, is
// in the engager's scheme and REST mapper, cached all with its own trim and budget, and wakes
// the route subscribers; the IngressClass, which Shardgate also renders, wakes the managed ones
// too.
func TestASecondKindIsCached(t *testing.T) {
	kinds := routekinds.Registry{routekinds.Ingress{}, routekindstest.Tunnels{}}
	e, err := NewEngager(Options{RouteKinds: kinds})
	if err != nil {
		t.Fatal(err)
	}
	tunnel := routekindstest.Tunnels{}.GroupVersionKind()
	if !e.opts.Scheme.Recognizes(tunnel) {
		t.Fatal("the kind's types are not in the user-cluster scheme")
	}
	for gvk, scope := range map[string]meta.RESTScopeName{"Tunnel": meta.RESTScopeNameNamespace, "IngressClass": meta.RESTScopeNameRoot} {
		k := tunnel
		if gvk == "IngressClass" {
			k = networkingv1.SchemeGroupVersion.WithKind(gvk)
		}
		m, err := e.mapper.RESTMapping(k.GroupKind(), k.Version)
		if err != nil || m.Scope.Name() != scope {
			t.Errorf("%s: mapping %+v, %v; want scope %s", gvk, m, err, scope)
		}
	}
	found := false
	for _, k := range cacheKinds(Capabilities{}, kinds, budget{objects: 100, bytes: 1 << 20}, nil) {
		if _, ok := k.Object.(*routekindstest.Tunnel); ok {
			found = k.Transform != nil && k.Labels == nil && k.MaxObjects == 100 && !k.Polled
		}
	}
	if !found {
		t.Error("Tunnels are not cached all, trimmed, within the budget")
	}
	if got := changeOf(&routekindstest.Tunnel{}, kinds); got != ChangeRoutes {
		t.Errorf("a Tunnel change is %b, want ChangeRoutes", got)
	}
	if got := changeOf(&networkingv1.IngressClass{}, kinds); got != ChangeRoutes|ChangeManaged {
		t.Errorf("an IngressClass change is %b, want ChangeRoutes|ChangeManaged", got)
	}
	if _, err := NewEngager(Options{}); err == nil {
		t.Error("an engager without route kinds")
	}
}
