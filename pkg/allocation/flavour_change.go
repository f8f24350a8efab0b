package allocation

import (
	"cmp"
	"fmt"
	"slices"
)

// Blocker is a route that holds its shard's flavour change, and why.
type Blocker struct {
	Kind, Namespace, Name string
	Why                   string
}

// AsMarked are routes as they will be once this pass's marks are written (now, its plan): each
// allocated one held by its shard, with its hosts and the kept-for mark its allocation gives it, a
// refused one holding nothing: to plan a flavour change with.
func AsMarked(routes []Route, now []Allocation) []Route {
	by := make(map[string]*Allocation, len(now))
	for i := range now {
		by[now[i].Kind+"/"+now[i].Namespace+"/"+now[i].Name] = &now[i]
	}
	out := slices.Clone(routes)
	for i := range out {
		a := by[out[i].Kind+"/"+out[i].Namespace+"/"+out[i].Name]
		switch {
		case a == nil:
		case a.Rejected: // its marks are taken away
			out[i].Shard, out[i].HeldHosts, out[i].KeptFor = "", nil, ""
		default:
			out[i].Shard, out[i].HeldHosts, out[i].KeptFor = a.Shard, a.Hosts, a.KeptFor
		}
	}
	return out
}

// ChangeBlockers are the routes shard serves in plan now that plan after (the same routes, planned
// with the shard's new flavour) does not keep on it: each would be refused or would move, so the
// change waits for them. Sorted by kind, namespace and name.
func ChangeBlockers(shard string, now, after []Allocation) []Blocker {
	then := make(map[string]Allocation, len(after))
	for _, a := range after {
		then[a.Kind+"/"+a.Namespace+"/"+a.Name] = a
	}
	var out []Blocker
	for _, a := range now {
		if a.Rejected || a.Shard != shard {
			continue
		}
		b := then[a.Kind+"/"+a.Namespace+"/"+a.Name]
		switch {
		case b.Rejected:
			out = append(out, Blocker{Kind: a.Kind, Namespace: a.Namespace, Name: a.Name, Why: "would be refused: " + b.Reason})
		case b.Shard != shard:
			out = append(out, Blocker{Kind: a.Kind, Namespace: a.Namespace, Name: a.Name,
				Why: fmt.Sprintf("would move to shard %s (%s)", b.Shard, b.MoveReason)})
		}
	}
	slices.SortFunc(out, func(x, y Blocker) int {
		return cmp.Or(cmp.Compare(x.Kind, y.Kind), cmp.Compare(x.Namespace, y.Namespace), cmp.Compare(x.Name, y.Name))
	})
	return out
}
