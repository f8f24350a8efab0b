package allocation

import "time"

// maxPassWrites and maxPassTime bound a pass: it starts at most maxPassWrites writes, and none
// after maxPassTime (but always one). A pass ends only when its writes and their Events are
// done, and a route created meanwhile waits for the next one: with 5,000 HTTPRoutes to tell at
// once, one Ingress created during the pass waited 22.8 s to be allocated, and with passes of
// 500 writes, a route created while 10,000 statuses were still to tell waited 4.8 s (p99,
// BenchmarkRouteKindsAllocation on the 2-core machine). The routes left over are the next
// pass', which comes at once (Reconcile asks for it) and plans the new route with them.
const (
	maxPassWrites = 500
	maxPassTime   = 300 * time.Millisecond
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
// its status.parents, and each costs that API server as much CPU as creating the route
// (BenchmarkRouteKindsAllocation's CPU-seconds): in a burst, routers serve every route once its
// marks are written, the status follows, and a route created meanwhile is attached ahead of the
// status writes still to come. A pass that writes a route's marks leaves its status to a later
// pass, which finds it then among the status-only changes.
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
