package vip

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// Available is VIPsAvailable for a cluster's VIPs (holders filled in) and planning problems: the
// first problem's reason with every message, else VIPsNotHeld while a VIP has no observed holder,
// else VIPsHeld naming who holds what.
func Available(vips []v1alpha1.ShardVIPs, problems []Problem) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionVIPsAvailable}
	if len(problems) > 0 {
		msgs := make([]string, len(problems))
		for i, p := range problems {
			msgs[i] = p.Message
		}
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, problems[0].Reason, strings.Join(msgs, "; ")
		return c
	}
	var held, missing []string
	for _, s := range vips {
		for _, a := range s.Addresses {
			if a.Holder == "" {
				missing = append(missing, fmt.Sprintf("%s (shard %s)", a.Address, s.Shard))
			} else {
				held = append(held, fmt.Sprintf("%s on %s", a.Address, a.Holder))
			}
		}
	}
	if len(missing) > 0 {
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonVIPsNotHeld
		c.Message = "no node holds " + strings.Join(missing, ", ") + ": keepalived is not running there yet, or no router of the shard answers"
		return c
	}
	c.Status, c.Reason, c.Message = metav1.ConditionTrue, v1alpha1.ReasonVIPsHeld, strings.Join(held, ", ")
	return c
}
