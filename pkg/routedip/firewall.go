package routedip

import (
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/nodeports"
)

// ParseNodePortRange parses a class's nodePortRange ("": Kubernetes' default).
func ParseNodePortRange(s string) (lo, hi int32, err error) {
	r, err := nodeports.Parse(cmp.Or(s, nodeports.Default))
	if err != nil {
		return 0, 0, fmt.Errorf("nodePortRange: %w", err)
	}
	return r.Min, r.Max, nil
}

// PortsOutside keeps the ports outside [lo, hi] (those inside are the platform's NodePort rule),
// sorted and without duplicates.
func PortsOutside(ports []v1alpha1.FirewallPort, lo, hi int32) []v1alpha1.FirewallPort {
	var out []v1alpha1.FirewallPort
	for _, p := range ports {
		if p.Port < lo || p.Port > hi {
			if p.Protocol == "" {
				p.Protocol = corev1.ProtocolTCP
			}
			out = append(out, p)
		}
	}
	slices.SortFunc(out, comparePorts)
	return slices.Compact(out)
}

func comparePorts(a, b v1alpha1.FirewallPort) int {
	if c := cmp.Compare(a.Port, b.Port); c != 0 {
		return c
	}
	return cmp.Compare(a.Protocol, b.Protocol)
}

// DesiredFirewall is a class's whole firewall map from its records in every cluster: each
// record's ports open on its holder's instance and, unless postAllow, on the instance a move is
// under way to (so the address never lands where its ports are closed). A holder that gave its
// address away drops out of the map with the record that named it.
func DesiredFirewall(records []v1alpha1.RoutedIPRecord, postAllow bool) []v1alpha1.FirewallRule {
	open := map[v1alpha1.FirewallPort]map[string]bool{}
	add := func(p v1alpha1.FirewallPort, id string) {
		if id == "" {
			return
		}
		if open[p] == nil {
			open[p] = map[string]bool{}
		}
		open[p][id] = true
	}
	for _, r := range records {
		for _, p := range r.Ports {
			add(p, r.ProviderID)
			if !postAllow {
				add(p, r.MovingProviderID)
			}
		}
	}
	out := make([]v1alpha1.FirewallRule, 0, len(open))
	for p, ids := range open {
		rule := v1alpha1.FirewallRule{Port: p.Port, Protocol: p.Protocol}
		for id := range ids {
			rule.ProviderIDs = append(rule.ProviderIDs, id)
		}
		slices.Sort(rule.ProviderIDs)
		out = append(out, rule)
	}
	slices.SortFunc(out, func(a, b v1alpha1.FirewallRule) int {
		return comparePorts(v1alpha1.FirewallPort{Port: a.Port, Protocol: a.Protocol}, v1alpha1.FirewallPort{Port: b.Port, Protocol: b.Protocol})
	})
	return out
}

// FirewallJSON is the map as the updateFirewall Job receives it.
func FirewallJSON(rules []v1alpha1.FirewallRule) string {
	if rules == nil {
		rules = []v1alpha1.FirewallRule{}
	}
	b, _ := json.Marshal(rules) // plain structs: cannot fail
	return string(b)
}

// FirewallHash identifies a map (of DesiredFirewall's canonical order).
func FirewallHash(rules []v1alpha1.FirewallRule) string {
	return fmt.Sprintf("%x", sha256.Sum256([]byte(FirewallJSON(rules))))[:16]
}

// Opens reports whether the applied map opens every one of ports on instance providerID.
func Opens(applied []v1alpha1.FirewallRule, providerID string, ports []v1alpha1.FirewallPort) bool {
	for _, p := range ports {
		i := slices.IndexFunc(applied, func(r v1alpha1.FirewallRule) bool { return r.Port == p.Port && r.Protocol == p.Protocol })
		if i < 0 || !slices.Contains(applied[i].ProviderIDs, providerID) {
			return false
		}
	}
	return true
}

// DefaultMaxPorts is a class's maxPorts when unset.
const DefaultMaxPorts = 8

// FirewallPorts are the ports the firewall opens for one routed IP: the given ports outside the
// class's NodePort range, each a valid port and protocol, at most the class's maxPorts (more is
// an error, not a silent cut: the Service would not work as its owner wrote it).
func FirewallPorts(ports []v1alpha1.FirewallPort, class Class) ([]v1alpha1.FirewallPort, error) {
	for _, p := range ports {
		if p.Port < 1 || p.Port > 65535 {
			return nil, fmt.Errorf("port %d is not a port", p.Port)
		}
		switch p.Protocol {
		case "", corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		default:
			return nil, fmt.Errorf("protocol %.20q is not TCP, UDP or SCTP", p.Protocol)
		}
	}
	out := PortsOutside(ports, class.PortLo, class.PortHi)
	if limit := max(class.MaxPorts, 1); len(out) > limit {
		return nil, fmt.Errorf("%d ports outside the NodePort range, more than the class's maxPorts (%d)", len(out), limit)
	}
	return out, nil
}
