// Package kubectlplugin is kubectl-shardgate: what a user-cluster owner asks of Shardgate
// (status, explain ingress/NAME) and what a seed operator asks (clusters), answered from what the
// controllers already publish — the kube-public ConfigMap, an Ingress's annotations, the
// ClusterIngresses — plus a DNS lookup of the final hosts.
package kubectlplugin

import (
	"sort"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// Explanation says where an Ingress's routes go and whether their names resolve.
type Explanation struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// State is Allocated, Rejected, or Pending (Shardgate has not written its decision yet, or
	// the Ingress is not of Shardgate's class).
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	Shard  string `json:"shard,omitempty"`
	// ShardDomain: the shard's names (it and every name under it) resolve to its routers.
	ShardDomain string `json:"shardDomain,omitempty"`
	// CNAMETarget is what the user's own hosts on this Ingress must be a CNAME to (set only when
	// it has such hosts).
	CNAMETarget string `json:"cnameTarget,omitempty"`
	Hosts       []Host `json:"hosts,omitempty"`
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

// Explain reads Shardgate's annotations on ing and looks its final hosts up; shardDomains (from
// the cluster's Status) tells which hosts Shardgate publishes.
func Explain(ing *networkingv1.Ingress, shardDomains map[string]string, lookup Lookup) Explanation {
	a := ing.Annotations
	e := Explanation{Namespace: ing.Namespace, Name: ing.Name, Shard: a[v1alpha1.ShardAnnotation], CNAMETarget: a[v1alpha1.CNAMETargetAnnotation]}
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
		return e // a rejected Ingress is not served: its hosts' answers would mislead
	default:
		e.State = "Pending"
		e.Reason = pendingReason(ing)
		return e
	}
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

func pendingReason(ing *networkingv1.Ingress) string {
	class := ""
	if ing.Spec.IngressClassName != nil {
		class = *ing.Spec.IngressClassName
	}
	if class != "" && class != "shardgate" {
		return "its ingressClassName is " + class + ", not shardgate: another controller serves it"
	}
	return "Shardgate has not allocated it yet (is the cluster engaged? see `kubectl shardgate status`)"
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
