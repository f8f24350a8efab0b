package allocation

import (
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// change is what a pass must write to a route for it to say its decision.
type change int

const (
	// settled: the route already says it (routekinds.Kind.AlreadySays).
	settled change = iota
	// marks: its label, annotations or spec change (Kind.Tell), or it is released. These attach
	// a route to its shard or take it off: they decide what the routers serve.
	marks
	// statusOnly: only what Shardgate tells in its status (Kind.TellStatus) differs.
	statusOnly
)

// passOrder is the order in which a pass writes the routes of changes (their indexes, settled
// ones left out): every change of marks before any change of status alone, each in the plan's
// order. An HTTPRoute's allocation is two writes to the user cluster's API server, its spec then
// its status.parents, and on the 2-core bench each cost that API server about as much CPU as
// creating the route (BenchmarkRouteKindsAllocation's CPU-seconds): in a burst, the routers serve
// every route once its marks are written, and the statuses follow. A pass that writes a route's
// marks leaves its status to the next pass (which the write's own watch event starts), where it
// is a status-only change. Every route's marks are still written in every pass that finds them
// changed, as before: a route whose write fails holds up no other.
//
// Statuses told lately (told[i]: started in this round of yielded passes, statusRound) come after
// the others: a pass may yield its statuses to a new route after a few (writePass.tell), and the
// next must not start again with the same few, or routes whose status always fails, or a tenant
// who keeps its routes' statuses changing, would take every pass' share.
func passOrder(changes []change, told []bool) []int {
	var order, status, lately []int
	for i, c := range changes {
		switch {
		case c == marks:
			order = append(order, i)
		case c == statusOnly && told[i]:
			lately = append(lately, i)
		case c == statusOnly:
			status = append(status, i)
		}
	}
	return append(append(order, status...), lately...)
}

// statusRound is the routes whose status passes started since the last pass that told every
// status it found: each route's status is started once in a round before any is started again.
type statusRound map[types.UID]bool

// next is the round the cluster's next pass starts from: none after a pass that told every status
// it found (yielded false); else round's routes that still exist (live, by UID), and those whose
// status this pass started (told).
func (round statusRound) next(yielded bool, told []types.UID, live func(yield func(types.UID) bool)) statusRound {
	if !yielded {
		return nil
	}
	out := statusRound{}
	for uid := range live {
		if round[uid] {
			out[uid] = true
		}
	}
	for _, uid := range told {
		out[uid] = true
	}
	return out
}

// toldOf says, for each change, whether round holds its route's status as told lately. A round
// in which every status left has been told starts anew (nil): none is told lately.
func (round statusRound) toldOf(changes []change, targets []client.Object) ([]bool, statusRound) {
	told := make([]bool, len(changes))
	fresh := false
	for i, c := range changes {
		if c == statusOnly {
			told[i] = round[targets[i].GetUID()]
			fresh = fresh || !told[i]
		}
	}
	if !fresh {
		return make([]bool, len(changes)), nil
	}
	return told, round
}
