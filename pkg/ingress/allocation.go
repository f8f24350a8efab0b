package ingress

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
)

// AllocShard is a shard as the allocation planner sees it.
type AllocShard struct {
	Name, Domain string
	// NamespaceSelector and RouteSelector filter which Ingresses may land here (nil: all).
	NamespaceSelector, RouteSelector labels.Selector
	// Capacity is the shard's ready routers, for LeastLoaded.
	Capacity int
}

// Route is an Ingress as the planner sees it.
type Route struct {
	Namespace, Name string
	Labels          map[string]string
	NamespaceLabels map[string]string
	// Hosts has one entry per rule; "" for a rule without a host.
	Hosts []string
	// Shard is the current allocation ("" for a new Ingress).
	Shard   string
	Created time.Time
}

// AllocationConfig is the cluster-wide allocation policy.
type AllocationConfig struct {
	// ClusterDomain is <clusterid>.<zone>; Zone is the parent zone shared with other clusters.
	ClusterDomain, Zone string
	Strategy            Strategy
	// InterNamespace lets several namespaces serve the same host (default: the first claims it).
	InterNamespace bool
	// AllowWildcards accepts hosts like *.example.org.
	AllowWildcards bool
}

// Allocation is the planner's decision for one Ingress.
type Allocation struct {
	Namespace, Name string
	Shard           string
	// Domain is the shard's domain apex: the Ingress' address and its CNAME target.
	Domain string
	// Hosts are the final hosts, one per rule (default hosts filled in).
	Hosts []string
	// CNAMETarget is the name a custom host must CNAME to (the shard's domain apex); empty when
	// every host is under the cluster domain.
	CNAMETarget string
	Rejected    bool
	Reason      string
	// MovedFrom is set when the Ingress had to leave a removed shard.
	MovedFrom string
}

// PlanAllocations decides every Ingress' shard and hosts. Existing allocations are loaded first
// and kept (clients cache DNS answers); only Ingresses of a removed shard move. Hosts are owned by
// the first namespace to claim them, in creation order.
func PlanAllocations(cfg AllocationConfig, shards []AllocShard, routes []Route) []Allocation {
	shards = slices.Clone(shards)
	slices.SortFunc(shards, func(a, b AllocShard) int { return strings.Compare(a.Name, b.Name) })
	byName := map[string]*AllocShard{}
	load := map[string]int{}
	for i := range shards {
		byName[shards[i].Name] = &shards[i]
	}
	// Allocated routes first (their claims predate any new decision), then by age. The sort
	// works on pointers with the "allocated" bit worked out once: a pass over 10,000 Ingresses
	// must not look shards up or copy routes in every comparison.
	type entry struct {
		r      *Route
		sticky bool
	}
	order := make([]entry, len(routes))
	for i := range routes {
		order[i] = entry{r: &routes[i], sticky: routes[i].Shard != "" && byName[routes[i].Shard] != nil}
	}
	slices.SortFunc(order, func(x, y entry) int {
		if x.sticky != y.sticky {
			if x.sticky {
				return -1
			}
			return 1
		}
		a, b := x.r, y.r
		return cmp.Or(a.Created.Compare(b.Created), strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	owner := map[string]string{} // host -> namespace
	allocated := 0
	out := make([]Allocation, 0, len(order))
	for _, e := range order {
		r := *e.r
		a := allocate(cfg, shards, byName, load, owner, allocated, r)
		if !a.Rejected {
			load[a.Shard]++
			allocated++
			for _, h := range a.Hosts {
				if _, ok := owner[h]; !ok {
					owner[h] = r.Namespace
				}
			}
		}
		out = append(out, a)
	}
	return out
}

func allocate(cfg AllocationConfig, shards []AllocShard, byName map[string]*AllocShard, load map[string]int,
	owner map[string]string, seq int, r Route) Allocation {
	a := Allocation{Namespace: r.Namespace, Name: r.Name}
	reject := func(format string, args ...any) Allocation {
		a.Rejected, a.Reason, a.Shard, a.Domain, a.Hosts = true, fmt.Sprintf(format, args...), "", "", nil
		return a
	}
	if len(r.Hosts) == 0 {
		r.Hosts = []string{""} // an Ingress with only a default backend gets one default host
	}
	// Hosts fix the shard when they are under a shard's domain.
	forced := ""
	custom := false
	for _, h := range r.Hosts {
		if h == "" {
			continue
		}
		norm, err := ValidateHost(h, cfg)
		if err != nil {
			return reject("%v", err)
		}
		if !InDomain(norm, cfg.ClusterDomain) {
			custom = true
			continue
		}
		s := shardOfHost(norm, shards)
		if s == "" {
			return reject("host %s is under the cluster domain but under no shard's domain", norm)
		}
		if forced != "" && forced != s {
			return reject("hosts are under two shards' domains (%s and %s); split the Ingress", forced, s)
		}
		forced = s
	}
	if cur, ok := byName[r.Shard]; r.Shard != "" && ok {
		a.Shard = cur.Name // sticky
	} else {
		if r.Shard != "" {
			a.MovedFrom = r.Shard
		}
		var cands []ShardLoad
		for _, s := range shards {
			if s.NamespaceSelector != nil && !s.NamespaceSelector.Matches(labels.Set(r.NamespaceLabels)) {
				continue
			}
			if s.RouteSelector != nil && !s.RouteSelector.Matches(labels.Set(r.Labels)) {
				continue
			}
			if forced != "" && s.Name != forced {
				continue
			}
			cands = append(cands, ShardLoad{Name: s.Name, Routes: load[s.Name], Capacity: s.Capacity, Seq: seq})
		}
		switch {
		case len(cands) == 0 && forced != "":
			return reject("its host is under shard %s's domain, but that shard does not accept this namespace or route", forced)
		case len(cands) == 0:
			return reject("no shard accepts this Ingress (namespace and route selectors)")
		}
		a.Shard = cfg.Strategy.Pick(cands)
	}
	domain := byName[a.Shard].Domain
	a.Domain = domain
	for _, h := range r.Hosts {
		if h == "" {
			label := r.Name + "-" + r.Namespace
			if errs := validation.IsDNS1123Label(label); len(errs) > 0 {
				return reject("default host label %q is not a DNS label: %s; set a host", label, strings.Join(errs, "; "))
			}
			h = label + "." + domain
		}
		h = strings.ToLower(strings.TrimSuffix(h, "."))
		if ns, ok := owner[h]; ok && ns != r.Namespace && !cfg.InterNamespace {
			return reject("host %s is already served for namespace %s", h, ns)
		}
		a.Hosts = append(a.Hosts, h)
	}
	if custom {
		a.CNAMETarget = domain
	}
	return a
}

// ValidateHost normalizes a rule host and refuses what Shardgate must not serve: invalid names,
// wildcards unless allowed, and names of another cluster or of the seed (under the zone but
// outside this cluster's domain).
func ValidateHost(host string, cfg AllocationConfig) (string, error) {
	h := strings.ToLower(strings.TrimSuffix(strings.TrimSpace(host), "."))
	if strings.HasPrefix(h, "*.") {
		if !cfg.AllowWildcards {
			return "", fmt.Errorf("wildcard host %s is not allowed by the IngressProfile", h)
		}
		if errs := validation.IsWildcardDNS1123Subdomain(h); len(errs) > 0 {
			return "", fmt.Errorf("host %s is not a valid wildcard name: %s", h, strings.Join(errs, "; "))
		}
	} else if errs := validation.IsDNS1123Subdomain(h); len(errs) > 0 {
		return "", fmt.Errorf("host %q is not a valid DNS name: %s", h, strings.Join(errs, "; "))
	}
	if cfg.Zone != "" && InDomain(h, cfg.Zone) && !InDomain(h, cfg.ClusterDomain) {
		return "", fmt.Errorf("host %s is under %s but outside this cluster's domain %s: it belongs to another cluster or the seed", h, cfg.Zone, cfg.ClusterDomain)
	}
	return h, nil
}

// InDomain reports whether host is domain or a name under it.
func InDomain(host, domain string) bool {
	return host == domain || strings.HasSuffix(host, "."+domain)
}

// shardOfHost returns the shard whose domain is the longest suffix of host: x.edge.c1.z belongs
// to shard edge, x.c1.z to default (DNS wildcards stop at existing names the same way).
func shardOfHost(host string, shards []AllocShard) string {
	best, bestLen := "", -1
	for _, s := range shards {
		if InDomain(strings.TrimPrefix(host, "*."), s.Domain) && len(s.Domain) > bestLen {
			best, bestLen = s.Name, len(s.Domain)
		}
	}
	return best
}
