// Package cistatus is the one path by which controllers write a ClusterIngress' status: each
// controller posts the part it owns (owners.go) to the Board, and one writer (writer.go) applies
// the parts together, with the Ready they add up to (ready.go), in one server-side apply.
package cistatus

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// Owner is a controller that owns a part of ClusterIngress status.
type Owner string

// The owners, in the order their parts are composed.
const (
	Lifecycle    Owner = "lifecycle"
	Identity     Owner = "identity"
	DNS          Owner = "dns"
	Shards       Owner = "shards"
	Allocation   Owner = "allocation"
	Certificates Owner = "certificates"
	VIPs         Owner = "vips"
	RoutedIPs    Owner = "routedips"
	Claims       Owner = "claims"
	Canary       Owner = "canary"
	Load         Owner = "load"
)

// ownership is what an owner's part holds: its conditions and its fields.
type ownership struct {
	conditions []string
	// fields copies the owner's fields from src to dst.
	fields func(dst, src *v1alpha1.ClusterIngressStatus)
	// trims cut what a user cluster's size can grow in the owner's part, for a part that would
	// take the status past the writer's budget, one stage at a time until it fits: the rest of it
	// is still written (none, or all done: the whole part is left out then).
	trims []func(*v1alpha1.ClusterIngressStatus)
}

// owned declares who owns what; a status field or condition type belongs to exactly one owner
// (TestOwnershipIsExclusive). Ready belongs to none: the writer computes it.
var owned = map[Owner]ownership{
	Lifecycle: {conditions: []string{v1alpha1.ConditionSourceAvailable}},
	// The domain and ID are the identity controller's: decided before the cluster can be observed,
	// and what the DNS controller publishes for.
	Identity: {conditions: []string{v1alpha1.ConditionDomainAssigned},
		fields: func(dst, src *v1alpha1.ClusterIngressStatus) {
			dst.ClusterID, dst.Domain = src.ClusterID, src.Domain
		}},
	DNS: {conditions: []string{v1alpha1.ConditionClusterReachable, v1alpha1.ConditionDNSPublished},
		fields: func(dst, src *v1alpha1.ClusterIngressStatus) {
			dst.DNSEndpointRef = src.DNSEndpointRef
			dst.ReadyNodes, dst.ReadyNodeCount = src.ReadyNodes, src.ReadyNodeCount
			dst.Targets, dst.TargetsSummary = src.Targets, src.TargetsSummary
			dst.Shards, dst.LastPublishedTime, dst.DNSVerifiedBy = src.Shards, src.LastPublishedTime, src.DNSVerifiedBy
			dst.ObservedGeneration = src.ObservedGeneration
		},
		// O's thousands of nodes with long names: first the nodes left out of DNS (the operator's
		// cue, not a record; nodesLeftOutCount still counts them), then the lists of names and
		// addresses go, never the shards' domains (the identity reads from them which domains the
		// cluster's records are under) nor the conditions; readyNodeCount still counts them.
		trims: []func(*v1alpha1.ClusterIngressStatus){
			func(st *v1alpha1.ClusterIngressStatus) {
				st.Shards = slices.Clone(st.Shards)
				for i := range st.Shards {
					st.Shards[i].NodesLeftOut = nil
				}
			},
			func(st *v1alpha1.ClusterIngressStatus) {
				st.ReadyNodes, st.Targets = cut(st.ReadyNodes), cut(st.Targets)
				st.TargetsSummary = strings.Join(st.Targets, ",")
				st.Shards = slices.Clone(st.Shards)
				for i := range st.Shards {
					st.Shards[i].ReadyNodes, st.Shards[i].Targets = cut(st.Shards[i].ReadyNodes), cut(st.Shards[i].Targets)
				}
			}}},
	Shards: {conditions: []string{v1alpha1.ConditionShardsAvailable, v1alpha1.ConditionRoutesProtected,
		v1alpha1.ConditionGatewayAPIAvailable}},
	// The shards' flavours are allocation's: it admits a flavour change once no route would be
	// dropped (ClusterIngress.Shards).
	Allocation: {conditions: []string{v1alpha1.ConditionCustomStrategyApplied, v1alpha1.ConditionFlavourChangesHeld,
		v1alpha1.ConditionAllocationHeld},
		fields: func(dst, src *v1alpha1.ClusterIngressStatus) {
			dst.Routes, dst.RejectedRoutes, dst.RouteKinds = src.Routes, src.RejectedRoutes, src.RouteKinds
			dst.PlannedKinds, dst.ShardFlavours = src.PlannedKinds, src.ShardFlavours
		}},
	Certificates: {conditions: []string{v1alpha1.ConditionCertificateReady},
		fields: func(dst, src *v1alpha1.ClusterIngressStatus) { dst.Certificate = src.Certificate }},
	VIPs: {conditions: []string{v1alpha1.ConditionVIPsAvailable},
		fields: func(dst, src *v1alpha1.ClusterIngressStatus) { dst.VIPs = src.VIPs }},
	RoutedIPs: {conditions: []string{v1alpha1.ConditionRoutedIPsAssigned},
		fields: func(dst, src *v1alpha1.ClusterIngressStatus) { dst.RoutedIPs = src.RoutedIPs }},
	Claims: {fields: func(dst, src *v1alpha1.ClusterIngressStatus) { dst.Claims = src.Claims }},
	Canary: {conditions: []string{v1alpha1.ConditionRoutesServing},
		fields: func(dst, src *v1alpha1.ClusterIngressStatus) { dst.Canaries = src.Canaries }},
	Load: {conditions: []string{v1alpha1.ConditionShardsSaturated},
		fields: func(dst, src *v1alpha1.ClusterIngressStatus) { dst.ShardLoad = src.ShardLoad }},
}

// trimmedNames is how many names or addresses a trimmed list keeps (sorted lists: the first).
const trimmedNames = 3

func cut(names []string) []string { return names[:min(len(names), trimmedNames)] }

// order is the owners in composition order (and the order of their conditions in status).
var order = []Owner{Lifecycle, Identity, DNS, Shards, Allocation, Certificates, VIPs, RoutedIPs, Claims, Canary, Load}

// conditionOwner maps each condition type to its owner.
var conditionOwner = func() map[string]Owner {
	m := map[string]Owner{}
	for o, w := range owned {
		for _, t := range w.conditions {
			m[t] = o
		}
	}
	return m
}()

// extract is owner's part of s: its fields and its conditions (everything else zero).
func extract(owner Owner, s *v1alpha1.ClusterIngressStatus) v1alpha1.ClusterIngressStatus {
	var part v1alpha1.ClusterIngressStatus
	w := owned[owner]
	if w.fields != nil {
		w.fields(&part, s.DeepCopy())
	}
	for _, c := range s.Conditions {
		if conditionOwner[c.Type] == owner {
			c.Message = bounded(c.Message)
			part.Conditions = append(part.Conditions, c)
		}
	}
	return part
}

// maxMessage bounds a condition's message (the API allows 32,768 bytes; messages joined from
// lists of shards or addresses have no bound of their own).
const maxMessage = 4096

func bounded(msg string) string {
	if len(msg) <= maxMessage {
		return msg
	}
	cut := maxMessage - len("…")
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + "…"
}

// recordInputs are the owners whose part the DNS controller's records follow, and which it hears
// of from the written status (its watch): a VIP shard's records are its VIPs, a RoutedIP shard's
// its held addresses, a claimed shard has records of its own. Their writes never wait for record
// writes (Board.SetYield): that would hold the very records the wait is for.
var recordInputs = map[Owner]bool{VIPs: true, RoutedIPs: true, Claims: true}
