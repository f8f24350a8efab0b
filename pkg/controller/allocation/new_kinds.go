package allocation

import (
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/allocation"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// plannedBefore are the route kinds the cluster's passes have planned: status.plannedKinds, and
// the kinds of status.routeKinds (all a release before plannedKinds recorded). None: no record.
func plannedBefore(st *v1alpha1.ClusterIngressStatus) map[string]bool {
	out := map[string]bool{}
	for _, k := range st.PlannedKinds {
		out[k] = true
	}
	for _, c := range st.RouteKinds {
		out[c.Kind] = true
	}
	return out
}

// distrustNewKinds forgets what the marks say of the routes of kinds the cluster's passes never
// planned: those marks were written where nothing guarded them (a release before the kind), so a
// tenant's hand-made marks would hold a host another namespace's route holds by Shardgate's (of
// two holders the older keeps it). This pass plans such routes afresh, as new ones, and writes
// their marks; the next trusts them. A kind not served for a while stays planned (plannedKinds):
// its routes keep their shards and hosts when it is served again. A cluster with no record at all
// trusts every kind's marks, as before: a re-created ClusterIngress' routes keep their shards and
// default hosts.
func distrustNewKinds(routes []allocation.Route, st *v1alpha1.ClusterIngressStatus) {
	known := plannedBefore(st)
	if len(known) == 0 {
		return
	}
	for i := range routes {
		if !known[routes[i].Kind] {
			routes[i].Shard, routes[i].HeldHosts = "", nil
		}
	}
}

// unservedPlanned are the kinds planned before that the cluster does not serve now (kinds), sorted;
// none where what is not served was turned off on purpose (offOnPurpose: Gateway API disabled in the
// profile, whose kinds plannedKinds then forgets).
func unservedPlanned(st *v1alpha1.ClusterIngressStatus, kinds routekinds.Registry, offOnPurpose bool) []string {
	if offOnPurpose {
		return nil
	}
	known := plannedBefore(st)
	for _, k := range kinds {
		delete(known, k.Name())
	}
	out := slices.Collect(maps.Keys(known))
	slices.Sort(out)
	return out
}

// allocationHeld is AllocationHeld for the planned kinds not served now.
func allocationHeld(unserved []string, generation int64) metav1.Condition {
	return metav1.Condition{Type: v1alpha1.ConditionAllocationHeld, Status: metav1.ConditionTrue,
		Reason: v1alpha1.ReasonPlannedKindUnserved, ObservedGeneration: generation,
		Message: "no route is allocated while " + strings.Join(unserved, ", ") + " (planned in this cluster before) " +
			"cannot be read: the hosts they hold are unknown meanwhile; routes already allocated stay served. " +
			"GatewayAPIAvailable says why (a role to apply, a CRD gone); turning gatewayAPI off in the profile " +
			"lets go of them"}
}

// plannedKinds are the kinds planned before and those planned now (kinds), sorted; with
// offOnPurpose, those planned now alone (Gateway API turned off: its kinds are new when it is on again).
func plannedKinds(st *v1alpha1.ClusterIngressStatus, kinds routekinds.Registry, offOnPurpose bool) []string {
	known := plannedBefore(st)
	if offOnPurpose {
		known = map[string]bool{}
	}
	for _, k := range kinds {
		known[k.Name()] = true
	}
	out := make([]string, 0, len(known))
	for k := range known {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
