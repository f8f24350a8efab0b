package allocation

import (
	"sync"
	"time"

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
	// tellFor is how long the pass tells statuses at least before it may yield (a part of the
	// time it took to read and plan the routes, planToTell), so that telling N statuses while
	// routes keep arriving costs a bounded multiple of them, not N/statusesBeforeYield full plans.
	tellFor time.Duration
	// tellingFrom is when the first status was started.
	tellingFrom time.Time
	g           errgroup.Group
	mu          sync.Mutex
	errs        []error
	events      []func()
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
	if p.tellingFrom.IsZero() {
		p.tellingFrom = time.Now()
	}
	if p.told >= statusesBeforeYield && time.Since(p.tellingFrom) >= p.tellFor && p.yield() {
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
// the routes written (by the resourceVersion they were written from) and the errors.
func (p *writePass) wait() (map[types.UID]string, []error) {
	_ = p.g.Wait()
	var events errgroup.Group
	events.SetLimit(writeWorkers)
	for _, create := range p.events {
		events.Go(func() error { create(); return nil })
	}
	_ = events.Wait()
	return p.stillUnseen, p.errs
}

// takeRound takes the cluster's status round (statusRound); nil when its last pass told all.
func (r *Reconciler) takeRound(key types.NamespacedName) statusRound {
	r.unseenMu.Lock()
	defer r.unseenMu.Unlock()
	round := r.rounds[key]
	delete(r.rounds, key)
	return round
}

// putRound keeps the round for the cluster's next pass (nil: none).
func (r *Reconciler) putRound(key types.NamespacedName, round statusRound) {
	if round == nil {
		return
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
