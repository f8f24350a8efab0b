package dns

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/dnsname"
	"github.com/shardgate/shardgate/pkg/dnsrecords"
	"github.com/shardgate/shardgate/pkg/names"
)

// RequestedDomain is the domain a ClusterIngress asks for (<clusterID>.<zone>), or, when it
// cannot have one, the DNSPublished condition that says why. Nothing it refuses touches records.
func RequestedDomain(spec v1alpha1.ClusterIngressSpec, servedZones []string) (string, *metav1.Condition) {
	zone, err := dnsname.NormalizeZone(spec.DNS.Zone)
	if err != nil {
		return "", published(metav1.ConditionFalse, v1alpha1.ReasonInvalidZone, err.Error())
	}
	if !zoneServed(zone, servedZones) {
		return "", published(metav1.ConditionFalse, v1alpha1.ReasonZoneNotServed,
			fmt.Sprintf("zone %s is not one the seed's external-dns publishes (%s); records would never reach DNS", zone, strings.Join(servedZones, ", ")))
	}
	domain, err := dnsname.Domain(spec.ClusterID, zone)
	if err != nil {
		reason := v1alpha1.ReasonInvalidClusterID
		if errors.Is(err, dnsname.ErrTooLong) {
			reason = v1alpha1.ReasonNamesTooLong
		}
		return "", published(metav1.ConditionFalse, reason, err.Error())
	}
	for _, s := range spec.ShardsOrDefault() {
		if err := dnsname.CheckDomain(names.ShardDomain(s.Name, domain)); err != nil {
			return "", published(metav1.ConditionFalse, v1alpha1.ReasonNamesTooLong, fmt.Sprintf("shard %s: %v", s.Name, err))
		}
	}
	if _, err := Settings(spec.DNS); err != nil {
		return "", published(metav1.ConditionFalse, v1alpha1.ReasonProfileInvalid, err.Error())
	}
	return domain, nil
}

// zoneServed reports whether zone is, or is under, one of the zones the seed's external-dns
// publishes. No list, or "*", serves everything.
func zoneServed(zone string, served []string) bool {
	if len(served) == 0 {
		return true
	}
	for _, s := range served {
		s = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(s), "."))
		if s == "*" || zone == s || strings.HasSuffix(zone, "."+s) {
			return true
		}
	}
	return false
}

// Settings converts resolved DNS settings for dnsrecords.Desired.
func Settings(d v1alpha1.DNSSettings) (dnsrecords.Settings, error) {
	s := dnsrecords.Settings{TTL: d.TTL, EmptyTargets: d.EmptyTargets, IngressNodes: labels.Everything()}
	for _, t := range d.AddressTypes {
		s.AddressTypes = append(s.AddressTypes, corev1.NodeAddressType(t))
	}
	for _, f := range d.IPFamilies {
		switch f {
		case v1alpha1.IPv4:
			s.IPv4 = true
		case v1alpha1.IPv6:
			s.IPv6 = true
		}
	}
	if d.IngressNodeSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(d.IngressNodeSelector)
		if err != nil {
			return s, fmt.Errorf("dns.ingressNodeSelector: %w", err)
		}
		s.IngressNodes = sel
	}
	return s, nil
}

// Input is what Decide decides from, for a ClusterIngress whose requested domain is usable.
type Input struct {
	Self, Holder types.NamespacedName
	Domain       string
	Spec         v1alpha1.ClusterIngressSpec
	// Current is the DNSEndpoint's spec now; CurrentExists false when there is none.
	Current       []dnsrecords.Endpoint
	CurrentExists bool
	// Engaged: the cluster has an engagement. Observed: its cache is synced and it answers; only
	// then are Shards and Replicas meaningful.
	Engaged, Observed bool
	Shards            []dnsrecords.ShardInput
	Replicas          map[string]int32
}

// Decision is what the DNS controller does and reports.
type Decision struct {
	// Write: set the DNSEndpoint to Endpoints. False leaves it exactly as it is.
	Write     bool
	Endpoints []dnsrecords.Endpoint
	// Hold: the ClusterIngress holds Domain from now on (status.clusterID and status.domain).
	Hold bool
	// Plan, when Observed, is the per-shard outcome for status.
	Plan      *dnsrecords.Plan
	Published metav1.Condition
}

// Decide decides a ClusterIngress' records and its DNSPublished condition. Records are written
// only for a cluster that holds its domain and can be observed; a conflict, or a cluster that
// cannot be seen, leaves them exactly as they are.
func Decide(in Input) Decision {
	if in.Holder != in.Self {
		return Decision{Published: *published(metav1.ConditionFalse, v1alpha1.ReasonClusterIDConflict,
			fmt.Sprintf("cluster ID %q (%s) is held by the cluster %s; set annotation %s to a unique ID", in.Spec.ClusterID, in.Domain, in.Holder, v1alpha1.ClusterIDAnnotation))}
	}
	if !in.Observed {
		// Never wipe DNS because Shardgate cannot see: the last records stay as they are.
		if in.CurrentExists {
			return Decision{Published: *published(metav1.ConditionTrue, v1alpha1.ReasonStaleRecordsKept,
				"the user cluster cannot be observed; the last published records are kept")}
		}
		reason := v1alpha1.ReasonConnecting
		if in.Engaged {
			reason = v1alpha1.ReasonUnreachable
		}
		return Decision{Published: *published(metav1.ConditionFalse, reason, "waiting to observe the user cluster's nodes")}
	}
	settings, _ := Settings(in.Spec.DNS) // checked by RequestedDomain
	plan := dnsrecords.Desired(dnsrecords.Input{Shards: in.Shards, Settings: settings, Current: in.Current})
	d := Decision{Hold: true, Plan: &plan, Endpoints: plan.Endpoints,
		Write: !dnsrecords.Equal(in.Current, plan.Endpoints) && (in.CurrentExists || len(plan.Endpoints) > 0)}
	switch {
	case plan.KeptLast:
		var kept []string
		for _, s := range plan.Shards {
			if s.KeptLast {
				kept = append(kept, s.Name)
			}
		}
		d.Published = *published(metav1.ConditionTrue, v1alpha1.ReasonKeptLastTargets,
			"a shard has no ready target; its last published targets are kept (emptyTargets: KeepLast): "+strings.Join(kept, ", "))
	case len(plan.Endpoints) == 0:
		d.Published = *published(metav1.ConditionFalse, v1alpha1.ReasonNoReadyNodes, "no ingress node is ready; no records are published")
	default:
		d.Published = *published(metav1.ConditionTrue, v1alpha1.ReasonPublished,
			fmt.Sprintf("%d shard(s) published; %d ready ingress node(s)", len(plan.Shards), len(plan.ReadyNodes)))
	}
	return d
}

func published(s metav1.ConditionStatus, reason, msg string) *metav1.Condition {
	return &metav1.Condition{Type: v1alpha1.ConditionDNSPublished, Status: s, Reason: reason, Message: msg}
}
