package routekinds

import (
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Registry is the route kinds of a seed controller, handed to the user-cluster engager (which
// caches them and gives them to the controllers with each cluster) and to kubectl-shardgate. A
// kind is added by writing its adapter and registering it there. Every kind's routes are planned
// together: a host has one owner whatever kind asks for it.
type Registry []Kind

// For is the kind named name ("Ingress"); nil when none is registered.
func (r Registry) For(name string) Kind {
	for _, k := range r {
		if k.Name() == name {
			return k
		}
	}
	return nil
}

// ByResource is the kind a kubectl-style resource name means: its kind or resource name, a short
// name, either qualified by the API group ("ingresses.networking.k8s.io"), in any case.
func (r Registry) ByResource(name string) Kind {
	name = strings.ToLower(name)
	for _, k := range r {
		group := k.GroupVersionKind().Group
		for _, n := range append([]string{k.Name(), k.Resource()}, k.ShortNames()...) {
			n = strings.ToLower(n)
			if name == n || group != "" && name == n+"."+group {
				return k
			}
		}
	}
	return nil
}

// Cached is every kind's Cached, in registry order.
func (r Registry) Cached() []Cached {
	var out []Cached
	for _, k := range r {
		out = append(out, k.Cached()...)
	}
	return out
}

// CachedFor is the Cached entry for objects of obj's type; false when no kind caches them.
func (r Registry) CachedFor(obj client.Object) (Cached, bool) {
	t := reflect.TypeOf(obj)
	for _, c := range r.Cached() {
		if reflect.TypeOf(c.Object) == t {
			return c, true
		}
	}
	return Cached{}, false
}

// KindOf is the kind whose routes are of obj's type.
func (r Registry) KindOf(obj client.Object) (Kind, bool) {
	t := reflect.TypeOf(obj)
	for _, k := range r {
		if reflect.TypeOf(k.New()) == t {
			return k, true
		}
	}
	return nil, false
}

// AddToScheme registers every kind's types.
func (r Registry) AddToScheme(s *runtime.Scheme) error {
	for _, k := range r {
		if err := k.AddToScheme(s); err != nil {
			return fmt.Errorf("route kind %s: %w", k.Name(), err)
		}
	}
	return nil
}

// Builtin is every route kind Shardgate serves, in registry order: a kind is registered here, for
// the seed controller and kubectl-shardgate alike.
func Builtin() Registry { return Registry{Ingress{}, HTTPRoute{}, GRPCRoute{}} }

// objects are pointers to items, a list's routes, as Kind.Items returns them.
func objects[T any, PT interface {
	*T
	client.Object
}](items []T) []client.Object {
	out := make([]client.Object, len(items))
	for i := range items {
		out[i] = PT(&items[i])
	}
	return out
}
