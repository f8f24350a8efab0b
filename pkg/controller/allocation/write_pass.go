package allocation

import (
	"sync"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// writeWorkers bounds the parallel writes of one cluster's decisions: a first allocation of
// thousands of routes must not be written one round trip at a time. Measured on the 2-core
// bench (BenchmarkAllocation, 10k adopted): 16 -> 22.9 s, 32 -> 17.7 s.
const writeWorkers = 32

// statusWorkers bounds the status-only writes in flight. A status costs the API server as much
// as the write that attaches a route (an HTTPRoute's status.parents: its CRD's CEL rules), so a
// few in flight keep it busy, and a new route's write waits behind only those few.
const statusWorkers = 8

// statusesBeforeYield is how many status-only writes a pass starts before it may yield to a new
// route (writePass.tell): one round of them, so statuses progress however fast routes come.
const statusesBeforeYield = statusWorkers

// eventsBeforeYield is how many Events a pass creates before it may yield the rest to a new route.
const eventsBeforeYield = writeWorkers

// writePass runs one pass' writes in parallel, skipping routes whose last write the cache has
// not shown yet, and collects what it wrote and the errors.
//
// The Events the writes record are created after the last write (later): an Event is a second
// request per decision, and created beside each write it halved how fast a first allocation of
// thousands of routes was told (BenchmarkAllocation, 10k adopted). Kubernetes' Events are the
// trailing, best-effort record (client-go's recorder queues them too); the route's own label and
// annotations are what a user and a router read first. The pass still ends only when its Events
// are created, so a pass never leaves work behind.
//
// A pass yields its statuses to routes waiting for their shard: once it has started its share of
// status-only writes (statusesBeforeYield), it starts none after a route input without a decision
// arrived (yield; Cluster.Undecided). That route's event starts the next pass, which attaches it
// first (passOrder) and tells the statuses left. Without it, a route created while a pass tells
// 10,000 HTTPRoutes their status.parents waited for all of them (BenchmarkRouteKindsAllocation:
// create -> allocated p99 6.56 s after a burst).
type writePass struct {
	unseen, stillUnseen map[types.UID]string
	// yield reports whether a route input without a decision arrived since the pass began.
	yield   func() bool
	told    int
	yielded bool
	// statusSlots holds one token per status-only write in flight (statusWorkers).
	statusSlots chan struct{}
	// toldNow are the routes whose status write this pass started.
	toldNow []types.UID
	// eventsLeft are the Events the pass left to the next (it yields them as it yields statuses).
	eventsLeft []func()
	g          errgroup.Group
	mu         sync.Mutex
	errs       []error
	events     []func()
}

func newWritePass(unseen map[types.UID]string, yield func() bool) *writePass {
	p := &writePass{unseen: unseen, stillUnseen: map[types.UID]string{}, yield: yield,
		statusSlots: make(chan struct{}, statusWorkers)}
	p.g.SetLimit(writeWorkers)
	return p
}

// write runs fn for o unless the cache still shows o as it was before our last write to it, and
// reports whether it did.
func (p *writePass) write(o client.Object, fn func() (bool, error)) bool {
	uid, version := o.GetUID(), o.GetResourceVersion()
	if rv, ok := p.unseen[uid]; ok && rv == version {
		p.mu.Lock()
		p.stillUnseen[uid] = rv // our write is on its way into the cache
		p.mu.Unlock()
		return false
	}
	p.g.Go(func() error {
		wrote, err := fn()
		p.mu.Lock()
		defer p.mu.Unlock()
		if err != nil {
			p.errs = append(p.errs, err)
		}
		if wrote {
			p.stillUnseen[uid] = version
		}
		return nil
	})
	return true
}

// tell runs a status-only write as write does, unless the pass yields its statuses: then it
// reports false, and the statuses after it are left to the next pass.
// It starts a write only once one of statusWorkers is free, and looks whether to yield then.
func (p *writePass) tell(o client.Object, fn func() (bool, error)) bool {
	if p.yielded {
		return false
	}
	p.statusSlots <- struct{}{}
	free := func() { <-p.statusSlots }
	if p.told >= statusesBeforeYield && p.yield() {
		free()
		p.yielded = true
		return false
	}
	if !p.write(o, func() (bool, error) { defer free(); return fn() }) {
		free() // skipped: it is not one of the pass' share
		return true
	}
	p.told++
	p.toldNow = append(p.toldNow, o.GetUID())
	return true
}

// later keeps an Event's creation for after the pass' writes.
func (p *writePass) later(create func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = append(p.events, create)
}

// wait waits for the writes, then creates their Events (as many at once as writes), and returns
// the routes written (by the resourceVersion they were written from) and the errors. Once it has
// created eventsBeforeYield Events, it yields the rest to a new route as statuses are yielded
// (eventsLeft, created first by the cluster's next pass).
func (p *writePass) wait() (map[types.UID]string, []error) {
	_ = p.g.Wait()
	var events errgroup.Group
	events.SetLimit(writeWorkers)
	for n, create := range p.events {
		if n >= eventsBeforeYield && p.yield() {
			p.eventsLeft = p.events[n:]
			break
		}
		events.Go(func() error { create(); return nil })
	}
	_ = events.Wait()
	return p.stillUnseen, p.errs
}

// leftWork reports whether the pass left statuses or Events to the next.
func (p *writePass) leftWork() bool { return p.yielded || len(p.eventsLeft) > 0 }

// takeEvents takes the Events the cluster's last pass left (writePass.eventsLeft).
func (r *Reconciler) takeEvents(key types.NamespacedName) []func() {
	r.unseenMu.Lock()
	defer r.unseenMu.Unlock()
	events := r.events[key]
	delete(r.events, key)
	return events
}

// putEvents keeps the Events a pass left for the cluster's next.
func (r *Reconciler) putEvents(key types.NamespacedName, events []func()) {
	if len(events) == 0 {
		return
	}
	r.unseenMu.Lock()
	defer r.unseenMu.Unlock()
	if r.events == nil {
		r.events = map[types.NamespacedName][]func(){}
	}
	r.events[key] = events
}

// forgetPasses drops what a departing cluster's passes left: its round and Events.
func (r *Reconciler) forgetPasses(key types.NamespacedName) {
	r.unseenMu.Lock()
	defer r.unseenMu.Unlock()
	delete(r.rounds, key)
	delete(r.events, key)
}

// takeRound takes the cluster's status round (statusRound); nil when its last pass told all.
func (r *Reconciler) takeRound(key types.NamespacedName) statusRound {
	r.unseenMu.Lock()
	defer r.unseenMu.Unlock()
	round := r.rounds[key]
	delete(r.rounds, key)
	return round
}

// putRound keeps the round for the cluster's next pass when this one yielded its statuses (with
// the routes it told added), and ends it when the pass told every status it found.
func (r *Reconciler) putRound(key types.NamespacedName, round statusRound, p *writePass) {
	if !p.yielded {
		return
	}
	if round == nil {
		round = statusRound{}
	}
	for _, uid := range p.toldNow {
		round[uid] = true
	}
	r.unseenMu.Lock()
	defer r.unseenMu.Unlock()
	if r.rounds == nil {
		r.rounds = map[types.NamespacedName]statusRound{}
	}
	r.rounds[key] = round
}

func (r *Reconciler) takeUnseen(key types.NamespacedName) map[types.UID]string {
	r.unseenMu.Lock()
	defer r.unseenMu.Unlock()
	m := r.unseen[key]
	delete(r.unseen, key)
	return m
}

// putUnseen keeps only this pass' entries, so deleted routes and departed clusters leave none.
func (r *Reconciler) putUnseen(key types.NamespacedName, m map[types.UID]string) {
	if len(m) == 0 {
		return
	}
	r.unseenMu.Lock()
	defer r.unseenMu.Unlock()
	if r.unseen == nil {
		r.unseen = map[types.NamespacedName]map[types.UID]string{}
	}
	r.unseen[key] = m
}
