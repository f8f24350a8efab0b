package gate

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// Groups follows the placement group of every ClusterIngress (Of decides; "" for none) from the
// manager's informer, for Owner.Group: it is asked on every decision, under the Owner's lock,
// and answers from a map instead of a cache read and copy.
type Groups struct {
	Of func(*v1alpha1.ClusterIngress) string

	mu sync.RWMutex
	m  map[types.NamespacedName]string
}

// Get is key's group ("" when it has none or is not known yet).
func (g *Groups) Get(key types.NamespacedName) string {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.m[key]
}

// Handler keeps the groups up to date: add it to the ClusterIngress informer.
func (g *Groups) Handler() toolscache.ResourceEventHandler {
	set := func(obj any) {
		ci, ok := obj.(*v1alpha1.ClusterIngress)
		if !ok {
			return
		}
		group := g.Of(ci)
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.m == nil {
			g.m = map[types.NamespacedName]string{}
		}
		if group == "" {
			delete(g.m, client.ObjectKeyFromObject(ci))
		} else {
			g.m[client.ObjectKeyFromObject(ci)] = group
		}
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    set,
		UpdateFunc: func(_, obj any) { set(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if ci, ok := obj.(*v1alpha1.ClusterIngress); ok {
				g.mu.Lock()
				delete(g.m, client.ObjectKeyFromObject(ci))
				g.mu.Unlock()
			}
		},
	}
}
