package dnsendpoint

import (
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/shardgate/shardgate/api/v1alpha1"
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

// Input is everything Desired decides from.
type Input struct {
	Domain   string
	Nodes    []corev1.Node
	Settings Settings
	// Current is the DNSEndpoint's spec now (nil when there is none), for KeepLast.
	Current []Endpoint
}

// Plan is the desired state of a cluster's DNSEndpoint and what status reports about it.
type Plan struct {
	// Endpoints is the desired spec. Empty means the cluster publishes no records.
	Endpoints []Endpoint
	// ReadyNodes are the eligible ingress nodes, sorted.
	ReadyNodes []string
	// Targets are the addresses in Endpoints, sorted.
	Targets []string
	// KeptLast is true when no node is ready and the last published records were kept.
	KeptLast bool
}

// Desired computes the records `*.<domain>` and `<domain>` for the cluster's ready ingress nodes.
// It never empties published records because of a lack of ready nodes unless the policy says
// Remove.
func Desired(in Input) Plan {
	var p Plan
	var v4, v6 []string
	for i := range in.Nodes {
		n := &in.Nodes[i]
		if !Eligible(n, in.Settings.IngressNodes) {
			continue
		}
		a4, a6 := nodeAddresses(n, in.Settings)
		if len(a4)+len(a6) == 0 {
			continue
		}
		p.ReadyNodes = append(p.ReadyNodes, n.Name)
		v4 = append(v4, a4...)
		v6 = append(v6, a6...)
	}
	slices.Sort(p.ReadyNodes)
	v4, v6 = sortedUnique(v4), sortedUnique(v6)

	if len(v4)+len(v6) == 0 {
		if in.Settings.EmptyTargets != v1alpha1.EmptyTargetsRemove && len(in.Current) > 0 {
			p.Endpoints = normalize(in.Current)
			p.KeptLast = true
			p.Targets = targetsOf(p.Endpoints)
		}
		return p
	}
	for _, name := range []string{WildcardName(in.Domain), in.Domain} {
		if len(v4) > 0 {
			p.Endpoints = append(p.Endpoints, Endpoint{DNSName: name, RecordType: RecordTypeA, RecordTTL: in.Settings.TTL, Targets: v4})
		}
		if len(v6) > 0 {
			p.Endpoints = append(p.Endpoints, Endpoint{DNSName: name, RecordType: RecordTypeAAAA, RecordTTL: in.Settings.TTL, Targets: v6})
		}
	}
	p.Endpoints = normalize(p.Endpoints)
	p.Targets = targetsOf(p.Endpoints)
	return p
}

// Eligible reports whether a node may carry ingress traffic: Ready, schedulable, not being
// deleted, not tainted NoExecute, and selected by sel (nil selects all).
func Eligible(n *corev1.Node, sel labels.Selector) bool {
	if n.DeletionTimestamp != nil || n.Spec.Unschedulable {
		return false
	}
	if sel != nil && !sel.Matches(labels.Set(n.Labels)) {
		return false
	}
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			return false
		}
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
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

func targetsOf(eps []Endpoint) []string {
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
