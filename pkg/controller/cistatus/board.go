package cistatus

import (
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Board holds the conditions that controllers other than the DNS controller report about a
// ClusterIngress (SourceAvailable from the lifecycle controller, ShardsAvailable and
// RoutesProtected from the shard controller), and wakes the DNS controller, which writes them
// with its own status and the Ready they feed. One writer per cluster: the controllers' status
// writes no longer conflict with one another (a merge patch with an optimistic lock loses to
// every other write of the same object), a condition and the Ready it changes go in one write,
// and a cluster is published with about three seed writes instead of five.
//
// It is this replica's memory: a replica that gives a cluster up forgets it (Forget), and the
// new owner's controllers report again when they start on it.
type Board struct {
	mu    sync.Mutex
	conds map[types.NamespacedName][]metav1.Condition
	// posts counts every Post; last is the count at key's latest one (for ForgetUnlessPostedSince).
	posts uint64
	last  map[types.NamespacedName]uint64
	wake  chan event.GenericEvent
}

// NewBoard returns an empty board.
func NewBoard() *Board {
	return &Board{conds: map[types.NamespacedName][]metav1.Condition{}, last: map[types.NamespacedName]uint64{},
		wake: make(chan event.GenericEvent, 4096)}
}

// Post records conds (without their transition times: the writer sets those) as key's latest,
// and wakes the writer when one of them differs from what was posted before.
func (b *Board) Post(key types.NamespacedName, conds ...metav1.Condition) {
	b.mu.Lock()
	b.posts++
	b.last[key] = b.posts
	changed := false
	cur := b.conds[key]
	for _, c := range conds {
		c.LastTransitionTime = metav1.Time{}
		i := slices.IndexFunc(cur, func(x metav1.Condition) bool { return x.Type == c.Type })
		switch {
		case i < 0:
			cur = append(cur, c)
		case cur[i] != c:
			cur[i] = c
		default:
			continue
		}
		changed = true
	}
	b.conds[key] = cur
	b.mu.Unlock()
	if changed {
		b.wake <- event.GenericEvent{Object: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}
	}
}

// Posted is the condition of type typ posted for key, if any.
func (b *Board) Posted(key types.NamespacedName, typ string) (metav1.Condition, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := slices.IndexFunc(b.conds[key], func(x metav1.Condition) bool { return x.Type == typ })
	if i < 0 {
		return metav1.Condition{}, false
	}
	return b.conds[key][i], true
}

// Conditions are the conditions posted for key (a copy).
func (b *Board) Conditions(key types.NamespacedName) []metav1.Condition {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.conds[key])
}

// Forget drops what was posted for key: the ClusterIngress is gone, or another replica serves it.
func (b *Board) Forget(key types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.conds, key)
	delete(b.last, key)
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
	if b.last[key] > mark {
		return
	}
	delete(b.conds, key)
	delete(b.last, key)
}

// Source wakes the writer (the DNS controller) for every ClusterIngress whose posted conditions
// changed, for its WatchesRawSource.
func (b *Board) Source() source.Source {
	return source.Channel(b.wake, &handler.EnqueueRequestForObject{})
}
