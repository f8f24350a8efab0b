package cistatus

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// Board holds, per ClusterIngress, the latest part each owner posted, and writes them (writer.go):
// one writer per cluster, so the controllers' status writes never conflict with one another and
// a burst of posts becomes one write (a cluster is published with about three seed writes).
//
// A controller reads the status through Overlay (its own and the others' latest posts over what
// the cache holds: it never decides on a record it has already replaced), edits its part in
// place, and posts it (Post; Write when the write must be done before it goes on).
//
// It is this replica's memory: a replica that gives a cluster up forgets it (Forget); the new
// owner's controllers post again when they start on it, and until an owner has posted, its part
// is what the object has.
type Board struct {
	client client.Client
	clock  clock.PassiveClock
	// Reader reads uncached (the manager's API reader): the status a first write starts from.
	Reader client.Reader

	mu      sync.Mutex
	entries map[types.NamespacedName]*entry
	// posts counts every Post; entry.last is the count at its latest one (ForgetUnlessPostedSince).
	posts uint64
	// writing serialises the writes of one cluster: a write composes the latest parts, so a later
	// write never stores older parts than an earlier one. Per key (not striped): a slow write of
	// one cluster must not hold another's back.
	writing map[types.NamespacedName]*keyLock
	wake    chan event.GenericEvent
	// writeThrough makes every post write at once (WriteThrough).
	writeThrough bool
	// yield, when set, says that records (what users resolve) are waiting to be written: status
	// writes then wait, up to maxYield after the change they carry was posted (SetYield).
	yield func() time.Duration
}

type entry struct {
	// uid is the object the parts were posted for: a ClusterIngress deleted and created again
	// under its name starts with no parts (a reconcile of the old one may post after its end).
	uid   types.UID
	parts map[Owner]*v1alpha1.ClusterIngressStatus
	last  uint64
	// written is the object as the last write stored it (the server's answer): newer than a
	// cache that has not caught up with it yet.
	written *v1alpha1.ClusterIngress
	// refused are parts the API server refused (applyValidParts), left out until their owner
	// posts another.
	refused map[Owner]*v1alpha1.ClusterIngressStatus
	// changed is when the oldest change not yet written was posted (zero: none), latest when the
	// newest was.
	changed, latest time.Time
	// feedsRecords: a part not yet written is one the DNS controller's records follow (recordInputs).
	feedsRecords bool
}

// NewBoard returns an empty board that writes through c.
func NewBoard(c client.Client) *Board {
	return &Board{client: c, clock: clock.RealClock{}, entries: map[types.NamespacedName]*entry{},
		writing: map[types.NamespacedName]*keyLock{},
		wake:    make(chan event.GenericEvent, 4096)}
}

// WriteThrough makes b write every post at once, as the writer would just after it: for a
// reconciler's unit test, which reads the status back from the API server after Reconcile. The
// writer's own behaviour (coalescing, the first write's wait) is tested in this package.
func (b *Board) WriteThrough() *Board {
	b.writeThrough = true
	return b
}

// Overlay puts every part posted for ci over the status the caller read, so a controller
// decides on the latest status this replica knows, its own last post included.
func (b *Board) Overlay(ci *v1alpha1.ClusterIngress) {
	parts := b.partsOf(ci)
	if len(parts) == 0 {
		return
	}
	ci.Status = compose(&ci.Status, parts, ci.Generation, b.clock.Now())
}

// Post records owner's part of ci.Status (its fields and conditions, as the controller left
// them after Overlay and its edits) and wakes the writer when it changed. ctx is the reconcile's:
// a reconcile whose context ended (the replica's fence lapsed meanwhile) posts nothing, since what
// it decided may already be older than what another replica wrote.
func (b *Board) Post(ctx context.Context, ci *v1alpha1.ClusterIngress, owner Owner) {
	if ctx.Err() != nil {
		return
	}
	if b.writeThrough {
		_ = b.Write(ctx, ci, owner) // a failed write shows as the status the test reads
		return
	}
	if b.post(ci, owner) {
		b.wake <- event.GenericEvent{Object: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Namespace: ci.Namespace, Name: ci.Name}}}
	}
}

// Write posts owner's part and writes the status now, for a controller that must not go on
// before its part is stored (a record that a Job or a grace period rests on).
func (b *Board) Write(ctx context.Context, ci *v1alpha1.ClusterIngress, owner Owner) error {
	if !b.post(ci, owner) && b.partWritten(client.ObjectKeyFromObject(ci), owner) {
		return nil // stored already: most passes of a controller change nothing
	}
	stored := &v1alpha1.ClusterIngress{}
	if err := b.client.Get(ctx, client.ObjectKeyFromObject(ci), stored); err != nil {
		return err
	}
	if err := b.write(ctx, stored, true); err != nil {
		return err
	}
	if b.refused(client.ObjectKeyFromObject(ci), owner) {
		// The others' parts were written without it: the caller must not go on as if it were.
		return fmt.Errorf("the %s part of the status was not written (refused by the API server or too large)", owner)
	}
	return nil
}

func (b *Board) post(ci *v1alpha1.ClusterIngress, owner Owner) bool {
	part := extract(owner, &ci.Status)
	normalize(&part)
	key := client.ObjectKeyFromObject(ci)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.posts++
	e := b.entries[key]
	if e == nil || !sameObject(e.uid, ci.UID) {
		e = &entry{uid: ci.UID, parts: map[Owner]*v1alpha1.ClusterIngressStatus{}}
		b.entries[key] = e
	}
	e.last = b.posts
	prev, seen := e.parts[owner]
	e.parts[owner] = &part
	changed := !seen || !equality.Semantic.DeepEqual(prev, &part)
	if changed {
		partChanges.WithLabelValues(string(owner)).Inc()
		e.latest = b.clock.Now()
		if e.changed.IsZero() {
			e.changed = e.latest
		}
		e.feedsRecords = e.feedsRecords || recordInputs[owner] || domainChanged(owner, e.written, &part)
	}
	return changed
}

// domainChanged: an identity part that takes or gives up a domain. Other clusters' records follow
// who holds a domain (the written status.domain), so it is never held behind records either.
func domainChanged(owner Owner, written *v1alpha1.ClusterIngress, part *v1alpha1.ClusterIngressStatus) bool {
	return owner == Identity && (written == nil || written.Status.Domain != part.Domain)
}

// sameObject: parts posted for uid a belong to the object b. An empty UID (an object built in a
// test) matches any.
func sameObject(a, b types.UID) bool { return a == "" || b == "" || a == b }

// partsOf is what was posted for ci's object, nothing when the parts are a deleted namesake's.
func (b *Board) partsOf(ci *v1alpha1.ClusterIngress) map[Owner]*v1alpha1.ClusterIngressStatus {
	b.mu.Lock()
	e := b.entries[client.ObjectKeyFromObject(ci)]
	stale := e != nil && !sameObject(e.uid, ci.UID)
	b.mu.Unlock()
	if stale {
		return nil
	}
	return b.parts(client.ObjectKeyFromObject(ci))
}

// parts is a copy of what was posted for key (the parts themselves are never changed).
func (b *Board) parts(key types.NamespacedName) map[Owner]*v1alpha1.ClusterIngressStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.entries[key]
	if e == nil {
		return nil
	}
	out := make(map[Owner]*v1alpha1.ClusterIngressStatus, len(e.parts))
	for o, p := range e.parts {
		out[o] = p
	}
	return out
}

// Posted is the latest posted condition of type typ for key, if any.
func (b *Board) Posted(key types.NamespacedName, typ string) (metav1.Condition, bool) {
	p, ok := b.parts(key)[conditionOwner[typ]]
	if !ok {
		return metav1.Condition{}, false
	}
	c := meta.FindStatusCondition(p.Conditions, typ)
	if c == nil {
		return metav1.Condition{}, false
	}
	return *c, true
}

// Forget drops what was posted for key: the ClusterIngress is gone, or another replica serves it.
func (b *Board) Forget(key types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.entries, key)
}

// Mark is a point in the board's history, for ForgetUnlessPostedSince.
func (b *Board) Mark() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.posts
}

// ForgetUnlessPostedSince drops what was posted for key unless something was posted for it after
// mark. For a reader whose cache says key is gone: a post made while it was reading is about an
// object the cache does not hold yet (created a moment ago), not one that is gone.
func (b *Board) ForgetUnlessPostedSince(key types.NamespacedName, mark uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e := b.entries[key]; e != nil && e.last <= mark {
		delete(b.entries, key)
	}
}

// Source wakes the writer for every ClusterIngress whose posted parts changed.
func (b *Board) Source() source.Source {
	return source.Channel(b.wake, &handler.EnqueueRequestForObject{})
}

// keyLock is one cluster's write lock, dropped when nobody holds or waits for it.
type keyLock struct {
	mu    sync.Mutex
	users int
}

func (b *Board) lockWrites(key types.NamespacedName) func() {
	b.mu.Lock()
	l := b.writing[key]
	if l == nil {
		l = &keyLock{}
		b.writing[key] = l
	}
	l.users++
	b.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		b.mu.Lock()
		if l.users--; l.users == 0 {
			delete(b.writing, key)
		}
		b.mu.Unlock()
	}
}

// partWritten: owner's latest part is what the last write stored.
func (b *Board) partWritten(key types.NamespacedName, owner Owner) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.entries[key]
	if e == nil || e.written == nil || e.parts[owner] == nil {
		return false
	}
	stored := extract(owner, &e.written.Status)
	normalize(&stored)
	return equality.Semantic.DeepEqual(&stored, e.parts[owner])
}

func (b *Board) setWritten(key types.NamespacedName, obj *v1alpha1.ClusterIngress) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e := b.entries[key]; e != nil {
		if !e.changed.IsZero() {
			writeLag.Observe(b.clock.Since(e.changed).Seconds())
		}
		e.written = obj
		e.changed, e.latest, e.feedsRecords = time.Time{}, time.Time{}, false
	}
}

func (b *Board) lastWritten(key types.NamespacedName) *v1alpha1.ClusterIngress {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e := b.entries[key]; e != nil {
		return e.written
	}
	return nil
}

func (b *Board) refuse(key types.NamespacedName, owner Owner, part *v1alpha1.ClusterIngressStatus) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e := b.entries[key]; e != nil {
		if e.refused == nil {
			e.refused = map[Owner]*v1alpha1.ClusterIngressStatus{}
		}
		e.refused[owner] = part
	}
}

// refused: owner's latest part is one the writer left out (applyValidParts, withinBudget).
func (b *Board) refused(key types.NamespacedName, owner Owner) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.entries[key]
	if e == nil || e.refused[owner] == nil || e.parts[owner] == nil {
		return false
	}
	return equality.Semantic.DeepEqual(e.refused[owner], e.parts[owner])
}

// forgetDeletedNamesake drops the parts posted for a deleted object of ci's name (a reconcile of
// it posted after its end): ci is another object, whose owners have not posted yet.
func (b *Board) forgetDeletedNamesake(ci *v1alpha1.ClusterIngress) {
	b.mu.Lock()
	defer b.mu.Unlock()
	key := client.ObjectKeyFromObject(ci)
	if e := b.entries[key]; e != nil && !sameObject(e.uid, ci.UID) {
		delete(b.entries, key)
	}
}

// withoutRefused is parts less those the API server refused and their owner has not changed since.
func (b *Board) withoutRefused(key types.NamespacedName, parts map[Owner]*v1alpha1.ClusterIngressStatus) map[Owner]*v1alpha1.ClusterIngressStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.entries[key]
	if e == nil || len(e.refused) == 0 {
		return parts
	}
	out := map[Owner]*v1alpha1.ClusterIngressStatus{}
	for o, p := range parts {
		if r, ok := e.refused[o]; ok && equality.Semantic.DeepEqual(r, p) {
			continue
		}
		out[o] = p
	}
	return out
}

// reader reads what must not come from a cache (Reader, else the client).
func (b *Board) reader() client.Reader {
	if b.Reader != nil {
		return b.Reader
	}
	return b.client
}

// maxYield bounds how long a status write waits for record writes (SetYield): the status may lag
// the records by this much in a burst, never more, however long the burst lasts. 3 s released
// the held writes into a slow machine's burst (a 250-cluster burst, out and back in, lasts that
// long on two cores), and the records waited behind them (p99 1.2-5 s against 0.5-1.1 s).
const maxYield = 10 * time.Second

// settleDelay: with SetYield, a cluster's status is written once its parts have not changed for
// this long. A burst of clusters changing out and back in (a switch rebooting) then posts twice
// and writes once, after its records, as the DNS controller's own deferred status pass did.
const settleDelay = time.Second

// yieldPoll is the shortest wait of a held status write before it looks again.
const yieldPoll = 200 * time.Millisecond

// SetYield makes status writes wait as long as recordsHold says records are still being written
// (the DNS controller's: 0 when none are), and until a cluster's parts have settled
// (settleDelay): the records are what users resolve, and in a burst (250 clusters' nodes changing
// at once) every status write ahead of them costs the seed's API server the time a record needed.
// One board writer cannot order its work behind another controller's queue; this is the order.
func (b *Board) SetYield(recordsHold func() time.Duration) { b.yield = recordsHold }

// yieldFor is how long key's status write should still wait (0: write now), at most maxYield after
// its oldest unwritten change. Never held: a cluster's first status (it carries the domain other
// controllers wait for) and a part the records follow (recordInputs: holding it would hold them).
func (b *Board) yieldFor(key types.NamespacedName, first bool) time.Duration {
	if b.yield == nil || first {
		return 0
	}
	b.mu.Lock()
	var changed, latest time.Time
	feeds := false
	if e := b.entries[key]; e != nil {
		changed, latest, feeds = e.changed, e.latest, e.feedsRecords
	}
	b.mu.Unlock()
	if feeds || changed.IsZero() || b.clock.Since(changed) >= maxYield {
		return 0
	}
	left := maxYield - b.clock.Since(changed)
	if quiet := b.clock.Since(latest); quiet < settleDelay {
		return min(settleDelay-quiet, left)
	}
	if hold := b.yield(); hold > 0 {
		// Looking again sooner than the hold ends only costs reconciles: a 250-cluster burst
		// polled every 200 ms took ~3,500 of them.
		return min(max(hold, yieldPoll), left)
	}
	return 0
}
