package certs

import (
	"cmp"
	"container/heap"
	"encoding/json"
	"errors"
	"slices"
	"time"
)

// OrderWindow is the sliding window ACME servers count new certificates in: Let's Encrypt allows
// 50 new certificates per registered domain per week, shared by every cluster of the seed (and
// whatever else uses the domain). A renewal of an identical set of names does not count.
const OrderWindow = 7 * 24 * time.Hour

// Order is one new ACME order Shardgate placed: a cluster's first certificate or a new set of
// names for it. The seed keeps the last week of them (the ledger) to stay within its budget.
type Order struct {
	// Cluster is the ClusterIngress, namespace/name.
	Cluster string `json:"cluster"`
	// Names is the NamesKey of the names ordered.
	Names string    `json:"names"`
	At    time.Time `json:"at"`
}

// Waiting is a cluster whose certificate needs a new order: its first, or new names.
type Waiting struct {
	// Cluster is the ClusterIngress, namespace/name.
	Cluster string
	// Created is when the ClusterIngress was created: older clusters go first.
	Created time.Time
	// First: the cluster has no certificate yet (a new name set of a cluster that has one waits
	// behind it).
	First bool
}

// Schedule decides when each waiting cluster may place its new order within perWeek new orders
// per OrderWindow across the seed, given the orders placed (the ledger). A time not after now
// means now. The queue is deterministic: first certificates before new names of a cluster that
// has one, then clusters that placed fewer orders in the window (a cluster whose tenants keep
// changing its names cannot starve the others), then the oldest cluster, then by name. Each cluster in turn takes the earliest
// moment at which fewer than perWeek orders fall in the window before it; the ones it follows
// are counted as placed at their turn.
func Schedule(perWeek int, orders []Order, waiting []Waiting, now time.Time) map[string]time.Time {
	perWeek = max(perWeek, 1)
	recent := Recent(orders, now)
	placed := map[string]int{}
	for _, o := range recent {
		placed[o.Cluster]++
	}
	queue := slices.Clone(waiting)
	slices.SortFunc(queue, func(a, b Waiting) int {
		return cmp.Or(-cmpBool(a.First, b.First), cmp.Compare(placed[a.Cluster], placed[b.Cluster]), a.Created.Compare(b.Created),
			cmp.Compare(a.Cluster, b.Cluster))
	})
	// Slot i frees a window after the order that last took it. Only the newest perWeek orders
	// matter: once an older one leaves the window, fewer than perWeek remain in it.
	free := &times{}
	for _, o := range recent[max(len(recent)-perWeek, 0):] {
		free.push(o.At.Add(OrderWindow))
	}
	for free.Len() < perWeek {
		free.push(now)
	}
	out := make(map[string]time.Time, len(queue))
	for _, w := range queue {
		at := free.pop()
		if at.Before(now) {
			at = now
		}
		out[w.Cluster] = at
		free.push(at.Add(OrderWindow))
	}
	return out
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// Recent are the orders inside the window before now, oldest first. An order dated after now
// (another replica's clock) counts as recent.
func Recent(orders []Order, now time.Time) []Order {
	var out []Order
	for _, o := range orders {
		if o.At.After(now.Add(-OrderWindow)) {
			out = append(out, o)
		}
	}
	slices.SortStableFunc(out, func(a, b Order) int { return a.At.Compare(b.At) })
	return out
}

// Ordered reports whether the ledger holds an order for these names of this cluster in the
// window: the grant stands (a write that recorded the order and failed to change the Certificate
// is finished without spending again).
func Ordered(orders []Order, cluster, namesKey string, now time.Time) bool {
	return slices.ContainsFunc(Recent(orders, now), func(o Order) bool { return o.Cluster == cluster && o.Names == namesKey })
}

// ErrLedger says the ledger does not parse; no order is placed until it is fixed or removed (an
// unreadable ledger must not read as an unspent budget).
var ErrLedger = errors.New("the ACME order ledger does not parse as JSON orders")

// ParseLedger reads the ledger; an empty ledger has no orders.
func ParseLedger(s string) ([]Order, error) {
	if s == "" {
		return nil, nil
	}
	var out []Order
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, ErrLedger
	}
	return out, nil
}

// FormatLedger writes the orders still inside the window, oldest first: the ledger stays as
// small as the budget.
func FormatLedger(orders []Order, now time.Time) string {
	b, _ := json.Marshal(Recent(orders, now)) // a slice of plain structs always marshals
	return string(b)
}

// times is a min-heap of times.
type times []time.Time

func (t times) Len() int           { return len(t) }
func (t times) Less(i, j int) bool { return t[i].Before(t[j]) }
func (t times) Swap(i, j int)      { t[i], t[j] = t[j], t[i] }
func (t *times) Push(x any)        { *t = append(*t, x.(time.Time)) }
func (t *times) Pop() any {
	old := *t
	x := old[len(old)-1]
	*t = old[:len(old)-1]
	return x
}
func (t *times) push(x time.Time) { heap.Push(t, x) }
func (t *times) pop() time.Time   { return heap.Pop(t).(time.Time) }
