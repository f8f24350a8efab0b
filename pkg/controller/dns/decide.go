package dns

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/dnsrecords"
)

// Input is what Decide decides from, for a ClusterIngress whose requested domain is usable.
type Input struct {
	Domain string
	Spec   v1alpha1.ClusterIngressSpec
	// Held: status.domain is Domain (the identity controller gave it to this cluster). Assigned is
	// the identity controller's DomainAssigned when it decided on this generation of the spec (nil
	// before): why the domain is not held.
	Held     bool
	Assigned *metav1.Condition
	// Current is the DNSEndpoint's spec now; CurrentExists false when there is none.
	Current       []dnsrecords.Endpoint
	CurrentExists bool
	// Engaged: the cluster has an engagement. Observed: its cache is synced and it answers; only
	// then are Shards and Replicas meaningful.
	Engaged, Observed bool
	Shards            []dnsrecords.ShardInput
	Replicas          map[string]int32
	// Settling: a router is ready but not settled yet (its flavour's readiness settle); it is
	// published this much later. Said in the message: kubectl shows it Ready before DNS has it.
	Settling time.Duration
}

// Decision is what the DNS controller does and reports.
type Decision struct {
	// Write: set the DNSEndpoint to Endpoints. False leaves it exactly as it is.
	Write     bool
	Endpoints []dnsrecords.Endpoint
	// Publish: the cluster holds its domain and is observed; Plan is the per-shard outcome for
	// status.
	Publish bool
	Plan    *dnsrecords.Plan
	// Wait: the identity controller has not decided on this spec yet; nothing is said until it has.
	Wait      bool
	Published metav1.Condition
}

// Decide decides a ClusterIngress' records and its DNSPublished condition. Records are written
// only for a cluster that holds its domain (decided by the identity controller, never here) and
// can be observed; a domain not held, or a cluster that cannot be seen, leaves them exactly as
// they are. While the domain is not held, DNSPublished says why with DomainAssigned's reason and
// message (ClusterIDConflict: another cluster holds it, or still publishes names under it), and
// records are removed only when another cluster holds the domain and publishes the same names
// (DomainYielded).
func Decide(in Input) Decision {
	if !in.Held {
		if in.Assigned == nil || in.Assigned.Status == metav1.ConditionTrue {
			return Decision{Wait: true}
		}
		d := Decision{Published: *published(metav1.ConditionFalse, in.Assigned.Reason, in.Assigned.Message)}
		if in.Assigned.Reason == v1alpha1.ReasonDomainYielded {
			// The holder publishes the same names: this cluster's copies go (the DNSEndpoint stays,
			// empty), and so does their record in status, so that they block nothing any more.
			d.Publish, d.Plan, d.Write = true, &dnsrecords.Plan{}, len(in.Current) > 0
		}
		return d
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
	settings, _ := dnsrecords.SettingsFrom(in.Spec.DNS) // checked by clusterid.RequestedDomain
	plan := dnsrecords.Desired(dnsrecords.Input{Shards: in.Shards, Settings: settings, Current: in.Current})
	d := Decision{Publish: true, Plan: &plan, Endpoints: plan.Endpoints,
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
	if in.Settling > 0 {
		d.Published.Message += fmt.Sprintf("; a router that turned ready is published within %s, once its routes "+
			"have loaded (its flavour's readiness settle)", max(in.Settling.Round(time.Second), time.Second))
	}
	return d
}

func published(s metav1.ConditionStatus, reason, msg string) *metav1.Condition {
	return &metav1.Condition{Type: v1alpha1.ConditionDNSPublished, Status: s, Reason: reason, Message: msg}
}
