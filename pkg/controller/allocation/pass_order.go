package allocation

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
// is a status-only change. Every route is still written in every pass that finds it changed, as
// before: a route whose write fails holds up no other.
func passOrder(changes []change) []int {
	var order, status []int
	for i, c := range changes {
		switch c {
		case marks:
			order = append(order, i)
		case statusOnly:
			status = append(status, i)
		}
	}
	return append(order, status...)
}
