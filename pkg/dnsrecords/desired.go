package dnsrecords

import (
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/dnsname"
)

// Settings are one cluster's resolved DNS settings.
type Settings struct {
	TTL int64
	// AddressTypes in order of preference (default ExternalIP, InternalIP).
	AddressTypes []corev1.NodeAddressType
	IPv4, IPv6   bool
	EmptyTargets v1alpha1.EmptyTargetsPolicy
	// IngressNodes selects the nodes that carry ingress traffic; nil selects all.
	IngressNodes labels.Selector
}

// ShardInput is one shard's part of a cluster's records.
type ShardInput struct {
	Name string
	// Domain the shard owns: its apex and wildcard are published.
	Domain string
	// Nodes whose addresses publish the shard (TargetNodes); health is checked here.
	Nodes []corev1.Node
	// RouterNodes run the shard's routers, ready or not (HostNetwork shards: RouterNodes): those
	// out of the answer are named with why in the plan; they publish nothing themselves.
	RouterNodes []corev1.Node
	// LoadBalancer publishing: the Service's addresses replace node addresses. IPs give A/AAAA
	// records; hostnames (used only when there is no IP) a CNAME.
	LoadBalancer          bool
	LoadBalancerIPs       []string
	LoadBalancerHostnames []string
}

// Input is everything Desired decides from.
type Input struct {
	Shards   []ShardInput
	Settings Settings
	// Current is the DNSEndpoint's spec now (nil when there is none), for KeepLast.
	Current []Endpoint
}

// ShardPlan is what Desired decided for one shard.
type ShardPlan struct {
	Name, Domain string
	ReadyNodes   []string
	Targets      []string
	KeptLast     bool
	// LeftOut: nodes its answer leaves out, and why: the published candidates (Nodes) but those
	// not selected as ingress nodes (an intended setup), and the nodes running its routers.
	// The most pressing reasons first, at most MaxNodesLeftOut; LeftOutCount counts them all.
	LeftOut      []v1alpha1.NodeLeftOut
	LeftOutCount int
}

// Plan is the desired state of a cluster's DNSEndpoint and what status reports about it.
type Plan struct {
	// Endpoints is the desired spec. Empty means the cluster publishes no records.
	Endpoints []Endpoint
	Shards    []ShardPlan
	// ReadyNodes and Targets are the union over shards, sorted.
	ReadyNodes []string
	Targets    []string
	// KeptLast is true when some shard had no target and kept its last published records.
	KeptLast bool
}

// Desired computes, for every shard, the records `*.<domain>` and `<domain>` pointing at its
// targets. A shard without targets keeps its last published records unless the policy says
// Remove: Shardgate never empties DNS because of a blip.
func Desired(in Input) Plan {
	var p Plan
	for _, sh := range in.Shards {
		eps, sp := desiredShard(sh, in.Settings, in.Current)
		p.Endpoints = append(p.Endpoints, eps...)
		p.Shards = append(p.Shards, sp)
		p.ReadyNodes = append(p.ReadyNodes, sp.ReadyNodes...)
		p.KeptLast = p.KeptLast || sp.KeptLast
	}
	p.Endpoints = normalize(p.Endpoints)
	p.ReadyNodes = sortedUnique(p.ReadyNodes)
	p.Targets = Targets(p.Endpoints)
	return p
}

func desiredShard(sh ShardInput, s Settings, current []Endpoint) ([]Endpoint, ShardPlan) {
	sp := ShardPlan{Name: sh.Name, Domain: sh.Domain}
	var v4, v6, cname []string
	if sh.LoadBalancer {
		for _, ip := range sh.LoadBalancerIPs {
			if a, err := netip.ParseAddr(ip); err == nil {
				if a.Is4() && s.IPv4 {
					v4 = append(v4, a.String())
				} else if a.Is6() && s.IPv6 {
					v6 = append(v6, a.String())
				}
			}
		}
		if len(v4)+len(v6) == 0 && len(sh.LoadBalancerHostnames) > 0 {
			cname = sh.LoadBalancerHostnames[:1] // a name has one CNAME
		}
	} else {
		for i := range sh.Nodes {
			n := &sh.Nodes[i]
			why := LeftOut(n, s.IngressNodes)
			a4, a6 := nodeAddresses(n, s)
			if why == "" && len(a4)+len(a6) == 0 {
				why = v1alpha1.NodeNoAddress
			}
			if why != "" {
				if why != v1alpha1.NodeNotSelected {
					sp.LeftOut = append(sp.LeftOut, v1alpha1.NodeLeftOut{Name: n.Name, Reason: why})
				}
				continue
			}
			sp.ReadyNodes = append(sp.ReadyNodes, n.Name)
			v4 = append(v4, a4...)
			v6 = append(v6, a6...)
		}
	}
	slices.Sort(sp.ReadyNodes)
	sp.LeftOut, sp.LeftOutCount = leftOut(sp.LeftOut, sh.RouterNodes, s.IngressNodes)
	v4, v6 = sortedUnique(v4), sortedUnique(v6)
	names := []string{dnsname.WildcardName(sh.Domain), sh.Domain}

	var eps []Endpoint
	if len(v4)+len(v6)+len(cname) == 0 {
		if s.EmptyTargets != v1alpha1.EmptyTargetsRemove {
			for _, e := range current {
				if slices.Contains(names, e.DNSName) {
					eps = append(eps, e)
				}
			}
			sp.KeptLast = len(eps) > 0
		}
		sp.Targets = Targets(eps)
		return eps, sp
	}
	for _, name := range names {
		for _, rec := range []struct {
			typ     string
			targets []string
		}{{RecordTypeA, v4}, {RecordTypeAAAA, v6}, {RecordTypeCNAME, cname}} {
			if len(rec.targets) > 0 {
				eps = append(eps, Endpoint{DNSName: name, RecordType: rec.typ, RecordTTL: s.TTL, Targets: rec.targets})
			}
		}
	}
	sp.Targets = Targets(eps)
	return eps, sp
}

// leftOutOrder: the most pressing reasons first, so the cap never hides them behind the others.
var leftOutOrder = []v1alpha1.NodeLeftOutReason{v1alpha1.NodeNotReady, v1alpha1.NodeDeleting, v1alpha1.NodeCordoned,
	v1alpha1.NodeNoExecuteTaint, v1alpha1.NodeNoAddress, v1alpha1.NodeNotSelected}

// leftOut completes the candidates' reasons with the router nodes out of the answer (whose router
// is not ready because of their node; a healthy node's unready router is no node's fault), and
// returns them by reason and name, capped, with their count.
func leftOut(found []v1alpha1.NodeLeftOut, routerNodes []corev1.Node,
	sel labels.Selector) ([]v1alpha1.NodeLeftOut, int) {
	for i := range routerNodes {
		n := &routerNodes[i]
		if slices.ContainsFunc(found, func(l v1alpha1.NodeLeftOut) bool { return l.Name == n.Name }) {
			continue
		}
		if why := LeftOut(n, sel); why != "" {
			found = append(found, v1alpha1.NodeLeftOut{Name: n.Name, Reason: why})
		}
	}
	slices.SortFunc(found, func(a, b v1alpha1.NodeLeftOut) int {
		if d := slices.Index(leftOutOrder, a.Reason) - slices.Index(leftOutOrder, b.Reason); d != 0 {
			return d
		}
		return strings.Compare(a.Name, b.Name)
	})
	return found[:min(len(found), v1alpha1.MaxNodesLeftOut)], len(found)
}

// LeftOut says why a node may not carry ingress traffic ("" when it may): it must be selected by
// sel (nil selects all), not being deleted, Ready (its first Ready condition, as Kubernetes reads
// it), schedulable (a cordon takes it out of DNS before a drain) and not tainted NoExecute. The
// lasting reason is said before a passing one, and sickness before what follows from it: the node
// lifecycle controller taints a NotReady node NoExecute, and a node may die while cordoned.
func LeftOut(n *corev1.Node, sel labels.Selector) v1alpha1.NodeLeftOutReason {
	switch {
	case sel != nil && !sel.Matches(labels.Set(n.Labels)):
		return v1alpha1.NodeNotSelected
	case n.DeletionTimestamp != nil:
		return v1alpha1.NodeDeleting
	}
	i := slices.IndexFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool { return c.Type == corev1.NodeReady })
	if i < 0 || n.Status.Conditions[i].Status != corev1.ConditionTrue {
		return v1alpha1.NodeNotReady
	}
	if n.Spec.Unschedulable {
		return v1alpha1.NodeCordoned
	}
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			return v1alpha1.NodeNoExecuteTaint
		}
	}
	return ""
}

// nodeAddresses returns the node's addresses of its most preferred address type that has any
// usable address, split by family.
func nodeAddresses(n *corev1.Node, s Settings) (v4, v6 []string) {
	for _, t := range s.AddressTypes {
		for _, a := range n.Status.Addresses {
			if a.Type != t {
				continue
			}
			ip, err := netip.ParseAddr(a.Address)
			if err != nil {
				continue
			}
			ip = ip.Unmap()
			switch {
			case ip.Is4() && s.IPv4:
				v4 = append(v4, ip.String())
			case ip.Is6() && s.IPv6:
				v6 = append(v6, ip.String())
			}
		}
		if len(v4)+len(v6) > 0 {
			return v4, v6
		}
	}
	return nil, nil
}

// Equal reports whether two endpoint lists publish the same records.
func Equal(a, b []Endpoint) bool {
	a, b = normalize(a), normalize(b)
	return slices.EqualFunc(a, b, func(x, y Endpoint) bool {
		return x.DNSName == y.DNSName && x.RecordType == y.RecordType && x.RecordTTL == y.RecordTTL &&
			x.SetIdentifier == y.SetIdentifier && slices.Equal(x.Targets, y.Targets)
	})
}

// normalize returns a copy sorted by name and type with sorted, unique targets.
func normalize(eps []Endpoint) []Endpoint {
	out := make([]Endpoint, len(eps))
	for i := range eps {
		eps[i].DeepCopyInto(&out[i])
		out[i].Targets = sortedUnique(out[i].Targets)
	}
	slices.SortFunc(out, func(x, y Endpoint) int {
		if x.DNSName != y.DNSName {
			if x.DNSName < y.DNSName {
				return -1
			}
			return 1
		}
		if x.RecordType < y.RecordType {
			return -1
		}
		if x.RecordType > y.RecordType {
			return 1
		}
		return 0
	})
	return out
}

// Targets are the sorted, unique targets of eps.
func Targets(eps []Endpoint) []string {
	var t []string
	for _, e := range eps {
		t = append(t, e.Targets...)
	}
	return sortedUnique(t)
}

func sortedUnique(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}
