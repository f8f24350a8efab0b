package routedip

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Node is what the election reads of a user-cluster node.
type Node struct {
	Name        string
	Created     time.Time
	Ready       bool
	Schedulable bool
	Deleting    bool
	// ProviderID is the cloud's instance ID; a node without one cannot be given an address.
	ProviderID string
	// Foreign: the provider ID is not proven to be one of the cluster's instances (Instances).
	Foreign bool
}

// Request is one routed IP to place.
type Request struct {
	// Key orders requests (namespace/name of the RoutedIP).
	Key string
	// Holder is the node the seed's record says holds the address; MovingTo the node a move in
	// progress gives it to.
	Holder, MovingTo string
	// Serving are the nodes running a ready endpoint of the RoutedIP's Service.
	Serving map[string]bool
}

// Decision is where a request's address should be.
type Decision struct {
	Key string
	// Node is the elected node; empty when no node is eligible (the record is left as it is:
	// an address is never taken away without a node to give it to).
	Node string
	// Why no node is eligible (empty when Node is set).
	Why string
}

// Elect places every request: a node is eligible when it is Ready, schedulable, not being
// deleted, has a provider ID proven to be the cluster's, runs a ready endpoint of the request's Service and holds fewer
// than limit addresses. An eligible holder keeps its address (a younger node appearing moves
// nothing: no flapping); an eligible node a move is already under way to keeps it; every other
// address goes to the youngest eligible node (newest creation time, then name), which is the
// one least likely to be drained for an upgrade soon.
func Elect(nodes []Node, reqs []Request, limit int) []Decision {
	limit = max(limit, 1)
	byName := make(map[string]Node, len(nodes))
	for _, n := range nodes {
		byName[n.Name] = n
	}
	reqs = slices.Clone(reqs)
	slices.SortFunc(reqs, func(a, b Request) int { return cmp.Compare(a.Key, b.Key) })
	load := map[string]int{}
	out := make(map[string]Decision, len(reqs))
	eligible := func(r Request, name string) bool {
		n, ok := byName[name]
		return ok && n.Ready && n.Schedulable && !n.Deleting && n.ProviderID != "" && !n.Foreign && r.Serving[name] && load[name] < limit
	}
	// Holders first, then moves under way, then the rest: the order is what makes a placement
	// sticky.
	for _, keep := range []func(Request) string{
		func(r Request) string { return r.Holder },
		func(r Request) string { return r.MovingTo },
	} {
		for _, r := range reqs {
			if _, done := out[r.Key]; done {
				continue
			}
			if n := keep(r); n != "" && eligible(r, n) {
				out[r.Key] = Decision{Key: r.Key, Node: n}
				load[n]++
			}
		}
	}
	youngestFirst := slices.Clone(nodes)
	slices.SortFunc(youngestFirst, func(a, b Node) int {
		if c := b.Created.Compare(a.Created); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	for _, r := range reqs {
		if _, done := out[r.Key]; done {
			continue
		}
		d := Decision{Key: r.Key}
		for _, n := range youngestFirst {
			if eligible(r, n.Name) {
				d.Node = n.Name
				load[n.Name]++
				break
			}
		}
		if d.Node == "" {
			d.Why = whyNone(r, nodes, load, limit)
		}
		out[r.Key] = d
	}
	res := make([]Decision, 0, len(reqs))
	for _, r := range reqs {
		res = append(res, out[r.Key])
	}
	return res
}

// whyNone says why no node qualifies, in counts (names of nodes are the cluster's, counts are
// enough to act on).
func whyNone(r Request, nodes []Node, load map[string]int, limit int) string {
	serving, healthy, withID := 0, 0, 0
	for _, n := range nodes {
		if !r.Serving[n.Name] {
			continue
		}
		serving++
		if n.Ready && n.Schedulable && !n.Deleting {
			healthy++
			if n.ProviderID != "" && !n.Foreign {
				withID++
			}
		}
	}
	switch {
	case serving == 0:
		return "no node runs a ready endpoint of the Service"
	case healthy == 0:
		return fmt.Sprintf("none of the %d nodes running a ready endpoint is Ready, schedulable and not being deleted", serving)
	case withID == 0:
		return fmt.Sprintf("none of the %d healthy nodes running a ready endpoint has a spec.providerID the class's providerIDPattern accepts for the cluster", healthy)
	default:
		return fmt.Sprintf("every one of the %d healthy nodes running a ready endpoint already holds %d routed IPs (the class's perNodeIPLimit)", withID, limit)
	}
}
