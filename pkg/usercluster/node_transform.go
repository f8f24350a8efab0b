package usercluster

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TrimNode is the cache transform for user-cluster Nodes: it keeps only what Shardgate decides
// from (name, labels, taints, unschedulable, the Ready condition's status, addresses, deletion)
// and drops the rest (images, other conditions, heartbeat times, managedFields, annotations).
// A realistic node shrinks from ~15 KiB to well under 1 KiB (see BenchmarkNodeCacheMemory).
func TrimNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	out := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:              n.Name,
			UID:               n.UID,
			ResourceVersion:   n.ResourceVersion,
			Labels:            n.Labels,
			DeletionTimestamp: n.DeletionTimestamp,
		},
		Spec: corev1.NodeSpec{Unschedulable: n.Spec.Unschedulable, Taints: n.Spec.Taints},
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			out.Status.Conditions = []corev1.NodeCondition{{Type: c.Type, Status: c.Status}}
			break
		}
	}
	out.Status.Addresses = n.Status.Addresses
	return out, nil
}

// nodeChanged reports whether a trimmed node changed in anything Shardgate decides from. Kubelet
// heartbeats change only fields TrimNode drops, so they cause no reconcile.
func nodeChanged(a, b *corev1.Node) bool {
	if a.Spec.Unschedulable != b.Spec.Unschedulable || (a.DeletionTimestamp == nil) != (b.DeletionTimestamp == nil) ||
		len(a.Labels) != len(b.Labels) || len(a.Spec.Taints) != len(b.Spec.Taints) ||
		len(a.Status.Addresses) != len(b.Status.Addresses) || readyStatus(a) != readyStatus(b) {
		return true
	}
	for k, v := range a.Labels {
		if b.Labels[k] != v {
			return true
		}
	}
	for i := range a.Spec.Taints {
		if a.Spec.Taints[i].Key != b.Spec.Taints[i].Key || a.Spec.Taints[i].Effect != b.Spec.Taints[i].Effect || a.Spec.Taints[i].Value != b.Spec.Taints[i].Value {
			return true
		}
	}
	for i := range a.Status.Addresses {
		if a.Status.Addresses[i] != b.Status.Addresses[i] {
			return true
		}
	}
	return false
}

func readyStatus(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}
