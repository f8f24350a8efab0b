// Package kubectlplugin is kubectl-shardgate: what a user-cluster owner asks of Shardgate
// (status, explain ingress/NAME) and what a seed operator asks (clusters), answered from what the
// controllers already publish — the kube-public ConfigMap, a route's annotations, the
// ClusterIngresses — plus a DNS lookup of the final hosts. Routes are of the kinds it is given
// (routekinds.Registry), as in the seed controller.
package kubectlplugin

import (
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// Explanation says where a route (an Ingress) goes and whether its names resolve.
type Explanation struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// State is Allocated, Rejected, or Pending (Shardgate has not written its decision yet, or
	// the route is another controller's: an Ingress not of Shardgate's class).
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	Shard  string `json:"shard,omitempty"`
	// ShardDomain: the shard's names (it and every name under it) resolve to its routers.
	ShardDomain string `json:"shardDomain,omitempty"`
	// CNAMETarget is what the user's own hosts on this route must be a CNAME to (set only when
	// it has such hosts).
	CNAMETarget string `json:"cnameTarget,omitempty"`
	Hosts       []Host `json:"hosts,omitempty"`
	// Served: the shard's routers say in the route's status that they serve it (an Ingress'
	// status.loadBalancer, an HTTPRoute's status.parents entry for its shard Gateway).
	Served bool `json:"served"`
	// RouterProblems are what those routers report wrong with it (an HTTPRoute's conditions that
	// are not True: a backend not found, say).
	RouterProblems []string `json:"routerProblems,omitempty"`
}

// Host is one final host and what DNS answers for it.
type Host struct {
	Name string `json:"name"`
	// Addresses the resolver returned (empty: it did not resolve).
	Addresses []string `json:"addresses,omitempty"`
	// Error is why the lookup failed (NXDOMAIN, timeout, ...).
	Error string `json:"error,omitempty"`
	// UnderShardDomain: the host lies under the shard's domain, so Shardgate publishes it; a
	// host outside it resolves only once its owner added the CNAME.
	UnderShardDomain bool `json:"underShardDomain"`
}

// Resolves is true when the host answered with at least one address.
func (h Host) Resolves() bool { return len(h.Addresses) > 0 }

// Lookup resolves a name to its addresses.
type Lookup func(name string) ([]string, error)

// Explain reads Shardgate's annotations on route, of kind k, and looks its final hosts up;
// shardDomains (from the cluster's Status) tells which hosts Shardgate publishes.
func Explain(k routekinds.Kind, route client.Object, shardDomains map[string]string, lookup Lookup) Explanation {
	a := route.GetAnnotations()
	e := Explanation{Namespace: route.GetNamespace(), Name: route.GetName(), Shard: a[v1alpha1.ShardAnnotation],
		CNAMETarget: a[v1alpha1.CNAMETargetAnnotation]}
	e.ShardDomain = shardDomains[e.Shard]
	if e.ShardDomain == "" {
		e.ShardDomain = e.CNAMETarget // a custom host's target is the shard's domain
	}
	decision := a[v1alpha1.AllocationAnnotation]
	switch {
	case decision == v1alpha1.AllocationAllocated:
		e.State = v1alpha1.AllocationAllocated
	case strings.HasPrefix(decision, "Rejected"):
		e.State = "Rejected"
		e.Reason = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(decision, "Rejected"), ":"))
		return e // a rejected route is not served: its hosts' answers would mislead
	default:
		e.State = "Pending"
		e.Reason = k.ServedElsewhere(route, render.RouteFlavours(nil))
		if e.Reason == "" {
			e.Reason = "Shardgate has not allocated it yet (is the cluster engaged? see `kubectl shardgate status`)"
		}
		return e
	}
	shard := routekinds.Shard{Name: e.Shard, Domain: e.ShardDomain}
	e.RouterProblems = k.RouterProblems(route, shard)
	// Named in its status, and not refused there (Accepted=False: the routers' own word).
	e.Served = k.Published(route, []routekinds.Shard{shard}) &&
		!slices.ContainsFunc(e.RouterProblems, func(p string) bool { return strings.HasPrefix(p, "Accepted=") })
	for _, h := range splitHosts(a[v1alpha1.HostsAnnotation]) {
		host := Host{Name: h, UnderShardDomain: e.ShardDomain != "" && (h == e.ShardDomain || strings.HasSuffix(h, "."+e.ShardDomain))}
		addrs, err := lookup(h)
		if err != nil {
			host.Error = err.Error()
		}
		sort.Strings(addrs)
		host.Addresses = addrs
		e.Hosts = append(e.Hosts, host)
	}
	return e
}

func splitHosts(s string) []string {
	var out []string
	for _, h := range strings.Split(s, ",") {
		if h = strings.TrimSpace(h); h != "" {
			out = append(out, h)
		}
	}
	return out
}
