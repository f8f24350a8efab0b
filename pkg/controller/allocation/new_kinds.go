package allocation

import (
	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/allocation"
)

// distrustNewKinds forgets what the marks say of the routes of kinds the cluster's last pass did
// not plan (absent from its status.routeKinds): those marks were written where nothing guarded
// them (the kind was not Shardgate's there: a release before it, a role without its rights,
// Gateway API off), so a tenant's hand-made marks would hold a host another namespace's route
// holds by Shardgate's (of two holders the older keeps it). This pass plans such routes afresh,
// as new ones, and writes their marks; the next trusts them. A cluster with no record at all
// (never planned, or a release before status.routeKinds) trusts every kind's marks, as before:
// a re-created ClusterIngress' routes keep their shards and default hosts.
func distrustNewKinds(routes []allocation.Route, planned []v1alpha1.RouteKindCount) {
	if len(planned) == 0 {
		return
	}
	known := make(map[string]bool, len(planned))
	for _, c := range planned {
		known[c.Kind] = true
	}
	for i := range routes {
		if !known[routes[i].Kind] {
			routes[i].Shard, routes[i].HeldHosts = "", nil
		}
	}
}
