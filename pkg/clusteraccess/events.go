package clusteraccess

import (
	"maps"
	"strings"
	"sync"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// Change says what changed in a user cluster, so that each controller is woken only by what it
// decides from: a burst of Ingress writes must not re-run the DNS and shard controllers.
type Change uint16

const (
	// ChangeNodes is a node added, removed, or changed in what DNS reads from it.
	ChangeNodes Change = 1 << iota
	// ChangeNodeLabels is a node added, removed, or relabelled: what shards' nodeSelectors match.
	// A readiness flip is not one, so a hundred nodes going NotReady do not re-run every shard.
	ChangeNodeLabels
	// ChangeManaged is any change to an object Shardgate manages (router pods included).
	ChangeManaged
	// ChangeRoutes is any change to a route, to what deciding routes reads (an IngressClass), or
	// to a Namespace.
	ChangeRoutes
	// ChangeVIPReports is a VIP agent's Lease written (who holds a VIP; renewed every few
	// seconds, so only the VIP controller listens).
	ChangeVIPReports
	// ChangeRoutedIPs is a RoutedIP or an EndpointSlice changed (where routed IPs may go).
	ChangeRoutedIPs
	// ChangeClaims is an IngressClaim changed.
	ChangeClaims
	// ChangeRouterLoad is a load reporter's Lease written (renewed every few seconds, so only the
	// load controller listens).
	ChangeRouterLoad
	// ChangeListeners is a ListenerSet changed, or a route of a namespace that has one (whose
	// allocation decides which shard's Gateway takes its listeners): a burst of routes elsewhere
	// does not wake the shard controller.
	ChangeListeners
	// changePhase is an engagement, sync, reachability or block change: every subscriber hears it.
	changePhase
)

type subscriber struct {
	interest Change
	ch       chan event.GenericEvent
}

// Subscribe returns a channel of GenericEvents naming the ClusterIngress whose user cluster
// changed in one of the interesting ways, or was engaged, synced, blocked or changed
// reachability (always). Use with source.Channel.
func (e *Engager) Subscribe(interest Change) <-chan event.GenericEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	ch := make(chan event.GenericEvent, 4096)
	e.subs = append(e.subs, subscriber{interest: interest | changePhase, ch: ch})
	return ch
}

func (e *Engager) notify(key types.NamespacedName, what Change) {
	e.mu.Lock()
	subs := e.subs
	e.mu.Unlock()
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	for _, s := range subs {
		if s.interest&what != 0 {
			s.ch <- event.GenericEvent{Object: obj}
		}
	}
}

// changed notifies subscribers once the cache is synced (before that, the sync itself does).
// A node change also starts the convergence clock.
func (e *Engager) changed(c *engaged, what Change) {
	c.mu.Lock()
	if what&ChangeNodes != 0 && c.pendingFrom.IsZero() {
		c.pendingFrom = e.opts.Clock.Now()
	}
	synced := c.synced
	c.mu.Unlock()
	if synced {
		e.notify(c.key, what)
	}
}

// changeOf is what a change to an object of obj's kind can affect. A route input Shardgate also
// renders (the shared IngressClass) is both: its drift is repaired, and it decides routes (which
// class is the default).
func changeOf(obj client.Object, routes routekinds.Registry) Change {
	if _, ok := obj.(*gatewayv1.ListenerSet); ok {
		return ChangeListeners
	}
	if c, ok := routes.CachedFor(obj); ok {
		if c.Rendered {
			return ChangeRoutes | ChangeManaged
		}
		return ChangeRoutes
	}
	switch obj.(type) {
	case *corev1.Namespace:
		return ChangeRoutes
	case *coordinationv1.Lease:
		if strings.HasPrefix(obj.GetName(), names.RouterLoadLeasePrefix) {
			return ChangeRouterLoad
		}
		return ChangeVIPReports
	case *v1alpha1.RoutedIP, *discoveryv1.EndpointSlice:
		return ChangeRoutedIPs
	case *v1alpha1.IngressClaim:
		return ChangeClaims
	}
	return ChangeManaged
}

func (e *Engager) nodeHandler(c *engaged) toolscache.ResourceEventHandler {
	// A node added or removed changes what every node subscriber decides from.
	const addedOrRemoved = ChangeNodes | ChangeNodeLabels
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { e.changed(c, addedOrRemoved) },
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Node)
			n, ok2 := newObj.(*corev1.Node)
			what := addedOrRemoved
			if ok1 && ok2 {
				what = nodeChange(o, n)
			}
			if what != 0 {
				e.changed(c, what)
			}
		},
		DeleteFunc: func(any) { e.changed(c, addedOrRemoved) },
	}
}

// changeHandler notifies subscribers of any change to an object of its kind once synced, except
// route and RoutedIP updates that touch only status: allocation decides from spec, labels and
// annotations, and the routers' address writes must not start another pass over every route of
// the cluster; the routed-IP controller writes RoutedIP status itself and decides from the seed's
// record.
//
// Routes (route) added or changed without a decision are counted first (countUndecided).
func (e *Engager) changeHandler(c *engaged, what Change, route bool) toolscache.ResourceEventHandler {
	changed := func(obj any) { e.changed(c, what|c.listeners.change(what, obj)) }
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			c.listeners.count(what, obj, 1)
			if route {
				c.countUndecided(obj)
			}
			changed(obj)
		},
		UpdateFunc: func(oldObj, newObj any) {
			if what&(ChangeRoutes|ChangeRoutedIPs|ChangeClaims|ChangeListeners) != 0 && statusOnly(oldObj, newObj) {
				return
			}
			if route {
				c.countUndecided(newObj)
			}
			changed(newObj)
		},
		DeleteFunc: func(obj any) {
			c.listeners.count(what, obj, -1)
			changed(obj)
		},
	}
}

// countUndecided counts a route added or changed that carries no decision of Shardgate's (a new
// route, one not yet allocated, one of another class): an allocation pass telling statuses
// yields to it (Cluster.Undecided). It is counted before the subscribers are notified, so a pass
// that sees the count grow is always followed by another. Namespaces and IngressClasses are not
// counted: they change no route's need of its first allocation.
func (c *engaged) countUndecided(obj any) {
	if o, ok := obj.(client.Object); ok {
		if _, decided := o.GetAnnotations()[v1alpha1.AllocationAnnotation]; decided {
			return
		}
	}
	c.undecided.Add(1)
}

// listenerNamespaces counts the ListenerSets of each namespace, so that a route's change wakes the
// shard controller only where a ListenerSet may take its host.
type listenerNamespaces struct {
	mu sync.Mutex
	n  map[string]int
}

// reset forgets every count: a new cache lists every ListenerSet again.
func (l *listenerNamespaces) reset() {
	l.mu.Lock()
	l.n = nil
	l.mu.Unlock()
}

// count adds delta to the count of obj's namespace when obj is a ListenerSet.
func (l *listenerNamespaces) count(what Change, obj any, delta int) {
	if what != ChangeListeners {
		return
	}
	ns := namespaceOf(obj)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == nil {
		l.n = map[string]int{}
	}
	if l.n[ns] += delta; l.n[ns] <= 0 {
		delete(l.n, ns)
	}
}

// change is ChangeListeners for a route of a namespace that has a ListenerSet.
func (l *listenerNamespaces) change(what Change, obj any) Change {
	if what != ChangeRoutes {
		return 0
	}
	ns := namespaceOf(obj)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n[ns] > 0 {
		return ChangeListeners
	}
	return 0
}

// namespaceOf is an object's namespace, also of a deletion whose final state was not seen.
func namespaceOf(obj any) string {
	key, err := toolscache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return ""
	}
	ns, _, _ := toolscache.SplitMetaNamespaceKey(key)
	return ns
}

// statusOnly reports whether an update left generation, labels, annotations and deletion alone.
func statusOnly(oldObj, newObj any) bool {
	o, ok1 := oldObj.(client.Object)
	n, ok2 := newObj.(client.Object)
	if !ok1 || !ok2 {
		return false
	}
	return o.GetGeneration() == n.GetGeneration() && n.GetGeneration() != 0 &&
		maps.Equal(o.GetLabels(), n.GetLabels()) && maps.Equal(o.GetAnnotations(), n.GetAnnotations()) &&
		o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp())
}
