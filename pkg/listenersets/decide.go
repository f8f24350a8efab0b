// Package listenersets decides how tenants' ListenerSets are served: which of their listeners go
// onto which shard's Gateway, which Secrets those listeners may read, and what each ListenerSet's
// status says. Traefik (3.7) reads no ListenerSet, so Shardgate, which controls the parent Gateway
// they attach to, merges them itself, as Gateway API asks of an implementation: a listener for a
// host lands on the Gateway of the shard serving that host, and only once the host is the
// ListenerSet's namespace's (a route of it holds the host by allocation, which gives a host one
// owner across every kind). The decision is pure; the shards controller gathers, renders and
// writes.
package listenersets

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/pkg/names"
)

// Ports tenants' listeners name: the shards' routers take HTTP and HTTPS on them (HostHTTP and
// HostHTTPS on host-network shards, the Service's ports otherwise), as the parent Gateway's own
// listener does.
const (
	PortHTTP  = 80
	PortHTTPS = 443
)

// MaxPerGateway is how many tenants' listeners one shard's Gateway takes: a Gateway holds at most
// 64 listeners (the CRD's limit), two of them the shard's own. MaxPerNamespace of them may be one
// namespace's, so that no tenant takes a shard's Gateway from the others.
const (
	MaxPerGateway   = 62
	MaxPerNamespace = 16
)

// MaxSecretsPerNamespace is how many Secrets a namespace's listeners may name: one ReferenceGrant
// (Shardgate's in that namespace) lists at most 16.
const MaxSecretsPerNamespace = 16

// Shardgate's reasons, beside Gateway API's own.
const (
	// ReasonHostnameRequired (Accepted=False): a listener without a hostname, or a wildcard, would
	// take hosts nobody checked.
	ReasonHostnameRequired = "HostnameRequired"
	// ReasonHostnameNotAllowed (Accepted=False): a name under the cluster's domain is Shardgate's,
	// served with the cluster's certificate.
	ReasonHostnameNotAllowed = "HostnameNotAllowed"
	// ReasonHostnameNotHeld (Programmed=False): no route of the namespace holds the host yet.
	ReasonHostnameNotHeld = "HostnameNotHeld"
	// ReasonNoGateway (Programmed=False): the shard holding the host has no Gateway (its flavour
	// serves no Gateway API).
	ReasonNoGateway = "ShardServesNoGateway"
	// ReasonShardNotApplied (Programmed=False): the shard's objects could not be applied this pass.
	ReasonShardNotApplied = "ShardNotApplied"
)

// Holder is who holds a host by allocation: the namespace of the routes allocated with it, their
// shard, and how many of its Gateway API routes there are (what attaches to a tenant's listener).
type Holder struct {
	Namespace, Shard string
	Routes           int32
}

// Input is what a decision reads.
type Input struct {
	// Sets are the cluster's ListenerSets; only those attached to the parent Gateway are decided.
	Sets []gatewayv1.ListenerSet
	// Holders are the hosts allocated routes hold, by host.
	Holders map[string]Holder
	// Gateways are the shards that have a Gateway.
	Gateways map[string]bool
	// ClusterDomain is the cluster's domain: names under it are Shardgate's.
	ClusterDomain string
	// Kinds are the route kinds the shards' listeners take (render.AllocatedRouteKinds): what a
	// listener's status says it supports.
	Kinds []gatewayv1.RouteGroupKind

	// What became of the last decision, for the status only (placement never depends on it):
	// Unapplied are the shards whose objects could not be applied, Ungranted why a namespace's
	// ReferenceGrant could not be written, and Routers the conditions the shards' routers give
	// each tenant listener on their Gateway (status.listeners, by listener name).
	Unapplied map[string]bool
	Ungranted map[string]string
	Routers   map[string][]metav1.Condition
}

// Listener is one tenant's listener as it goes onto a shard's Gateway.
type Listener struct {
	// Name is its name on the Gateway: unique per ListenerSet and listener.
	Name string
	// Namespace is the ListenerSet's: only its routes attach, and its Secrets are read.
	Namespace string
	Hostname  string
	HTTPS     bool
	// Secrets are the names of its certificates' Secrets, in Namespace.
	Secrets []string
}

// Decision is what Decide decided.
type Decision struct {
	// Listeners are the listeners each shard's Gateway takes beside its own, in precedence order.
	Listeners map[string][]Listener
	// Grants are the Secrets per namespace that the shards' Gateways may read (a ReferenceGrant in
	// that namespace), sorted.
	Grants map[string][]string
	// Status is the status of every ListenerSet attached to the parent.
	Status map[types.NamespacedName]gatewayv1.ListenerSetStatus
}

// Attached reports whether s is attached to the parent Gateway. A parentRef without a namespace
// means the ListenerSet's own, so only Shardgate's namespace could name the parent that way, and
// no tenant writes there.
func Attached(s *gatewayv1.ListenerSet) bool {
	p := s.Spec.ParentRef
	return ptr.Deref(p.Group, gatewayv1.GroupName) == gatewayv1.GroupName && ptr.Deref(p.Kind, "Gateway") == "Gateway" &&
		string(ptr.Deref(p.Namespace, gatewayv1.Namespace(s.Namespace))) == names.Namespace &&
		p.Name == names.ParentGatewayName && s.Namespace != names.Namespace
}

// Decide merges the ListenerSets attached to the parent, oldest first (then by namespace/name), as
// Gateway API orders them. A listener is accepted when it is HTTP on PortHTTP or HTTPS on PortHTTPS
// with an exact hostname outside the cluster's domain and certificates in its own namespace; it is
// programmed on the Gateway of the shard of the routes of its namespace that hold its hostname. A
// hostname another namespace holds is Conflicted, and nothing of it is served; so is a second
// listener for the same hostname and protocol.
func Decide(in Input) Decision {
	d := Decision{Listeners: map[string][]Listener{}, Grants: map[string][]string{},
		Status: map[types.NamespacedName]gatewayv1.ListenerSetStatus{}}
	sets := slices.Clone(in.Sets)
	slices.SortStableFunc(sets, func(a, b gatewayv1.ListenerSet) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	taken := map[string]bool{}       // hostname and protocol already on a Gateway
	perNamespace := map[string]int{} // shard and namespace → listeners placed
	for i := range sets {
		s := &sets[i]
		if !Attached(s) {
			continue
		}
		st := gatewayv1.ListenerSetStatus{}
		accepted, programmed := 0, 0
		for _, l := range s.Spec.Listeners {
			ls, ok, onGateway := decideListener(in, s, l, taken, d.Listeners, perNamespace, d.Grants[s.Namespace])
			st.Listeners = append(st.Listeners, ls)
			if ok {
				accepted++
			}
			if onGateway == nil {
				continue
			}
			if meta.IsStatusConditionTrue(ls.Conditions, string(gatewayv1.ListenerEntryConditionProgrammed)) {
				programmed++
			}
			shard := in.Holders[onGateway.Hostname].Shard
			perNamespace[shard+"/"+s.Namespace]++
			d.Listeners[shard] = append(d.Listeners[shard], *onGateway)
			for _, sec := range onGateway.Secrets {
				if !slices.Contains(d.Grants[s.Namespace], sec) {
					d.Grants[s.Namespace] = append(d.Grants[s.Namespace], sec)
				}
			}
		}
		st.Conditions = setConditions(s.Generation, len(s.Spec.Listeners), accepted, programmed)
		d.Status[types.NamespacedName{Namespace: s.Namespace, Name: s.Name}] = st
	}
	for ns := range d.Grants {
		slices.Sort(d.Grants[ns])
	}
	return d
}

// decideListener decides one listener: its status, whether it is accepted, and what goes onto a
// Gateway (nil: nothing).
func decideListener(in Input, s *gatewayv1.ListenerSet, l gatewayv1.ListenerEntry, taken map[string]bool,
	placed map[string][]Listener, perNamespace map[string]int, granted []string) (gatewayv1.ListenerEntryStatus, bool, *Listener) {
	st := gatewayv1.ListenerEntryStatus{Name: l.Name, SupportedKinds: slices.Clone(in.Kinds)}
	gen := s.Generation
	refused := func(typ, reason, msg string) (gatewayv1.ListenerEntryStatus, bool, *Listener) {
		st.Conditions = listenerConditions(gen, typ, reason, msg)
		return st, false, nil
	}
	host := string(ptr.Deref(l.Hostname, ""))
	https := l.Protocol == gatewayv1.HTTPSProtocolType
	switch {
	case l.Protocol != gatewayv1.HTTPProtocolType && !https:
		return refused(string(gatewayv1.ListenerEntryConditionAccepted), string(gatewayv1.ListenerEntryReasonUnsupportedProtocol),
			"the shards' routers serve HTTP and HTTPS listeners only")
	case https && l.Port != PortHTTPS || !https && l.Port != PortHTTP:
		return refused(string(gatewayv1.ListenerEntryConditionAccepted), string(gatewayv1.ListenerEntryReasonPortUnavailable),
			fmt.Sprintf("the shards' routers take HTTP on port %d and HTTPS on port %d", PortHTTP, PortHTTPS))
	case host == "" || strings.HasPrefix(host, "*"):
		return refused(string(gatewayv1.ListenerEntryConditionAccepted), ReasonHostnameRequired,
			"a listener needs an exact hostname (no wildcard), one your namespace's routes hold")
	case in.ClusterDomain != "" && (host == in.ClusterDomain || strings.HasSuffix(host, "."+in.ClusterDomain)):
		return refused(string(gatewayv1.ListenerEntryConditionAccepted), ReasonHostnameNotAllowed,
			"names under "+in.ClusterDomain+" are Shardgate's, served with the cluster's certificate")
	}
	var secrets []string
	if https {
		if l.TLS == nil || len(l.TLS.CertificateRefs) == 0 {
			return refused(string(gatewayv1.ListenerEntryConditionResolvedRefs),
				string(gatewayv1.ListenerEntryReasonInvalidCertificateRef), "an HTTPS listener needs a certificateRef")
		}
		for _, ref := range l.TLS.CertificateRefs {
			if ptr.Deref(ref.Group, "") != "" || ptr.Deref(ref.Kind, "Secret") != "Secret" {
				return refused(string(gatewayv1.ListenerEntryConditionResolvedRefs),
					string(gatewayv1.ListenerEntryReasonInvalidCertificateRef), "certificateRefs name Secrets only")
			}
			if string(ptr.Deref(ref.Namespace, gatewayv1.Namespace(s.Namespace))) != s.Namespace {
				return refused(string(gatewayv1.ListenerEntryConditionResolvedRefs),
					string(gatewayv1.ListenerEntryReasonRefNotPermitted), "certificateRefs name Secrets of the ListenerSet's own namespace only")
			}
			secrets = append(secrets, string(ref.Name))
		}
		if n := len(granted) + len(slices.DeleteFunc(slices.Clone(secrets), func(s string) bool {
			return slices.Contains(granted, s)
		})); n > MaxSecretsPerNamespace {
			return refused(string(gatewayv1.ListenerEntryConditionResolvedRefs),
				string(gatewayv1.ListenerEntryReasonInvalidCertificateRef), fmt.Sprintf(
					"a namespace's ListenerSets may name %d Secrets (one ReferenceGrant's limit), and older listeners name them",
					MaxSecretsPerNamespace))
		}
	}
	key := string(l.Protocol) + " " + host
	holder, held := in.Holders[host]
	switch {
	case held && holder.Namespace != s.Namespace:
		st.Conditions = conflicted(gen, string(gatewayv1.ListenerEntryReasonHostnameConflict),
			"the hostname is held by another namespace's routes")
		return st, false, nil
	case taken[key]:
		st.Conditions = conflicted(gen, string(gatewayv1.ListenerEntryReasonListenerConflict),
			"an older listener of this namespace is for the same hostname and protocol")
		return st, false, nil
	case !held:
		st.Conditions = pending(gen, ReasonHostnameNotHeld, "no route of this namespace is allocated with hostname "+host+
			" yet: attach a route for it to Gateway "+names.Namespace+"/"+names.ParentGatewayName)
		return st, true, nil
	case !in.Gateways[holder.Shard]:
		st.Conditions = pending(gen, ReasonNoGateway, "the hostname's routes are on shard "+holder.Shard+
			", whose routers serve no Gateway API")
		return st, true, nil
	case perNamespace[holder.Shard+"/"+s.Namespace] >= MaxPerNamespace:
		return refused(string(gatewayv1.ListenerEntryConditionAccepted), string(gatewayv1.ListenerEntryReasonTooManyListeners),
			fmt.Sprintf("a namespace may have %d listeners on shard %s's Gateway, and older ones hold them", MaxPerNamespace,
				holder.Shard))
	case len(placed[holder.Shard]) >= MaxPerGateway:
		return refused(string(gatewayv1.ListenerEntryConditionAccepted), string(gatewayv1.ListenerEntryReasonTooManyListeners),
			fmt.Sprintf("shard %s's Gateway takes %d listeners of ListenerSets, and older ones hold them", holder.Shard, MaxPerGateway))
	}
	taken[key] = true
	st.AttachedRoutes = holder.Routes
	out := &Listener{Name: ListenerName(s.Namespace, s.Name, string(l.Name)), Namespace: s.Namespace,
		Hostname: host, HTTPS: https, Secrets: secrets}
	st.Conditions = placedConditions(in, gen, holder.Shard, out)
	return st, true, out
}

// placedConditions are the conditions of a listener on a shard's Gateway: what became of it,
// worst first: its shard not applied, its namespace's grant not written, then what the routers say
// of it (they resolve its certificate: Shardgate reads no Secret); all True otherwise.
func placedConditions(in Input, gen int64, shard string, l *Listener) []metav1.Condition {
	programmed, resolved := string(gatewayv1.ListenerEntryConditionProgrammed), string(gatewayv1.ListenerEntryConditionResolvedRefs)
	switch why, ungranted := in.Ungranted[l.Namespace]; {
	case in.Unapplied[shard]:
		return listenerConditions(gen, programmed, ReasonShardNotApplied,
			"shard "+shard+"'s objects could not be applied; its platform team sees why (ShardsAvailable)")
	case ungranted && l.HTTPS:
		return listenerConditions(gen, resolved, string(gatewayv1.ListenerEntryReasonRefNotPermitted), why)
	}
	out := listenerConditions(gen, "", "", "")
	for _, typ := range []string{resolved, programmed} {
		if c := meta.FindStatusCondition(in.Routers[l.Name], typ); c != nil && c.Status == metav1.ConditionFalse {
			reason := c.Reason
			if len(reason) > 64 {
				reason = "RouterReported"
			}
			return listenerConditions(gen, typ, reason, "the shard's routers: "+bounded(c.Message, 512))
		}
	}
	return out
}

// bounded cuts what the routers wrote to n bytes.
func bounded(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// ListenerName is a tenant's listener's name on a shard's Gateway: a section name no shard's own
// listener has, the same for the same ListenerSet and listener.
func ListenerName(namespace, set, listener string) string {
	sum := sha256.Sum256([]byte(namespace + "/" + set + "/" + listener))
	return "ls-" + hex.EncodeToString(sum[:8])
}

// listenerConditions are a listener's conditions: all True, except typ, which is False for reason.
func listenerConditions(gen int64, typ, reason, msg string) []metav1.Condition {
	var out []metav1.Condition
	for _, t := range []gatewayv1.ListenerEntryConditionType{gatewayv1.ListenerEntryConditionAccepted,
		gatewayv1.ListenerEntryConditionResolvedRefs, gatewayv1.ListenerEntryConditionProgrammed} {
		c := metav1.Condition{Type: string(t), Status: metav1.ConditionTrue, Reason: string(t), ObservedGeneration: gen}
		if string(t) == typ || typ != "" && t == gatewayv1.ListenerEntryConditionProgrammed {
			c.Status, c.Reason, c.Message = metav1.ConditionFalse, reason, msg
		}
		out = append(out, c)
	}
	return append(out, metav1.Condition{Type: string(gatewayv1.ListenerEntryConditionConflicted), Status: metav1.ConditionFalse,
		Reason: "NoConflicts", ObservedGeneration: gen})
}

// conflicted: accepted, but Conflicted and so not programmed.
func conflicted(gen int64, reason, msg string) []metav1.Condition {
	out := listenerConditions(gen, string(gatewayv1.ListenerEntryConditionProgrammed), reason, msg)
	out[len(out)-1] = metav1.Condition{Type: string(gatewayv1.ListenerEntryConditionConflicted), Status: metav1.ConditionTrue,
		Reason: reason, Message: msg, ObservedGeneration: gen}
	return out
}

// pending: accepted, not yet programmed.
func pending(gen int64, reason, msg string) []metav1.Condition {
	return listenerConditions(gen, string(gatewayv1.ListenerEntryConditionProgrammed), reason, msg)
}

// setConditions are a ListenerSet's Accepted and Programmed.
func setConditions(gen int64, listeners, accepted, programmed int) []metav1.Condition {
	acc := metav1.Condition{Type: string(gatewayv1.ListenerSetConditionAccepted), Status: metav1.ConditionTrue,
		Reason: string(gatewayv1.ListenerSetReasonAccepted), ObservedGeneration: gen}
	if accepted == 0 {
		acc.Status, acc.Reason = metav1.ConditionFalse, string(gatewayv1.ListenerSetReasonListenersNotValid)
		acc.Message = "no listener is accepted: see status.listeners"
	}
	prog := metav1.Condition{Type: string(gatewayv1.ListenerSetConditionProgrammed), Status: metav1.ConditionTrue,
		Reason: string(gatewayv1.ListenerSetReasonProgrammed), ObservedGeneration: gen}
	if programmed < listeners {
		prog.Status, prog.Reason = metav1.ConditionFalse, string(gatewayv1.ListenerSetReasonPending)
		prog.Message = fmt.Sprintf("%d of %d listeners are programmed: see status.listeners", programmed, listeners)
		if accepted == 0 {
			prog.Reason = string(gatewayv1.ListenerSetReasonListenersNotValid)
		}
	}
	return []metav1.Condition{acc, prog}
}
