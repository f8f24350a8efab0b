package listenersets

import (
	"strings"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// Route is what one route's allocation marks say (only Shardgate writes them: the admission
// policy refuses anyone else), never what its spec asks: a route edited to another namespace's
// host does not hold it until allocation says so.
type Route struct {
	Namespace, Shard string
	Hosts            []string
	// GatewayRoute: a Gateway API route, which attaches to a tenant's listener (an Ingress does not).
	GatewayRoute bool
}

// RouteOf reads route's marks; false when it is not allocated.
func RouteOf(route client.Object, gatewayRoute bool) (Route, bool) {
	ann := route.GetAnnotations()
	shard := route.GetLabels()[v1alpha1.ShardLabel]
	if shard == "" || ann[v1alpha1.AllocationAnnotation] != v1alpha1.AllocationAllocated || ann[v1alpha1.HostsAnnotation] == "" {
		return Route{}, false
	}
	return Route{Namespace: route.GetNamespace(), Shard: shard, Hosts: strings.Split(ann[v1alpha1.HostsAnnotation], ","),
		GatewayRoute: gatewayRoute}, true
}

// Holders are who holds each of hosts by the routes' marks. Allocation gives a host one
// namespace and, within it, one shard; should the marks ever say otherwise (a pass half
// written), the host is held by nobody's namespace: no listener of it is served until they agree.
func Holders(routes []Route, hosts map[string]bool) map[string]Holder {
	out := map[string]Holder{}
	for _, r := range routes {
		for _, h := range r.Hosts {
			if !hosts[h] {
				continue
			}
			cur, seen := out[h]
			switch {
			case !seen:
				cur = Holder{Namespace: r.Namespace, Shard: r.Shard}
			case cur.Namespace != r.Namespace || cur.Shard != r.Shard:
				cur = Holder{Shard: cur.Shard}
			}
			if r.GatewayRoute && cur.Namespace != "" {
				cur.Routes++
			}
			out[h] = cur
		}
	}
	return out
}

// Hostnames are the hostnames the listeners of the ListenerSets attached to the parent ask for:
// the only hosts whose holders a decision reads.
func Hostnames(sets []gatewayv1.ListenerSet) map[string]bool {
	out := map[string]bool{}
	for i := range sets {
		if !Attached(&sets[i]) {
			continue
		}
		for _, l := range sets[i].Spec.Listeners {
			if h := string(ptr.Deref(l.Hostname, "")); h != "" {
				out[h] = true
			}
		}
	}
	return out
}
