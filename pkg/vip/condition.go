package vip

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// Available is VIPsAvailable for a cluster's VIPs (holders filled in) and planning problems, with
// every message. Its reason is the gravest: DuplicateHolder (a split brain: connections break at
// random), then NodesNotObserved (the cluster cannot be read: no holder is known, and none is
// claimed missing), then VIPsNotHeld (a VIP in DNS reaching nothing), then the first planning
// problem; the alerts page on DuplicateHolder and VIPsNotHeld, so a planning problem of another
// shard (a tenant's claimed shard finding its pool exhausted) must not hide them. Else VIPsHeld
// naming who holds what.
func Available(vips []v1alpha1.ShardVIPs, problems []Problem) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionVIPsAvailable}
	msgs := make([]string, 0, len(problems)+1)
	for _, p := range problems {
		msgs = append(msgs, p.Message)
	}
	unobserved := slices.ContainsFunc(problems, func(p Problem) bool { return p.Reason == v1alpha1.ReasonNodesNotObserved })
	var held, missing []string
	for _, s := range vips {
		for _, a := range s.Addresses {
			switch {
			case unobserved || split(problems, a.Address):
				// No holder is known, or two are: neither is "no node holds it".
			case a.Holder == "":
				missing = append(missing, fmt.Sprintf("%s (shard %s)", a.Address, s.Shard))
			default:
				held = append(held, fmt.Sprintf("%s on %s", a.Address, a.Holder))
			}
		}
	}
	if len(missing) > 0 {
		msgs = append(msgs, "no node holds "+strings.Join(missing, ", ")+
			": keepalived is not running there yet, or no router of the shard answers")
	}
	c.Status, c.Message = metav1.ConditionFalse, strings.Join(msgs, "; ")
	switch {
	case slices.ContainsFunc(problems, func(p Problem) bool { return p.Reason == v1alpha1.ReasonDuplicateHolder }):
		c.Reason = v1alpha1.ReasonDuplicateHolder
	case unobserved:
		c.Reason = v1alpha1.ReasonNodesNotObserved
	case len(missing) > 0:
		c.Reason = v1alpha1.ReasonVIPsNotHeld
	case len(problems) > 0:
		c.Reason = problems[0].Reason
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, v1alpha1.ReasonVIPsHeld, strings.Join(held, ", ")
	}
	return c
}

// split: FillHolders found address held by two nodes (its DuplicateHolder message names it).
func split(problems []Problem, address string) bool {
	return slices.ContainsFunc(problems, func(p Problem) bool {
		return p.Reason == v1alpha1.ReasonDuplicateHolder && strings.Contains(p.Message, " VIP "+address+" is held by ")
	})
}
