package clusteraccess

import (
	"maps"
	"slices"
	"unique"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TrimNode is the cache transform for user-cluster Nodes: it keeps only what Shardgate decides
// from (name, creation time, labels, taints, unschedulable, provider ID, the Ready condition's status, addresses, deletion)
// and drops the rest (images, other conditions, heartbeat times, managedFields, annotations,
// host names).
// A realistic node shrinks from ~15 KiB to well under 1 KiB (see BenchmarkNodeCacheMemory).
func TrimNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	out := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:              n.Name,
			ResourceVersion:   n.ResourceVersion,
			CreationTimestamp: n.CreationTimestamp,
			Labels:            internLabels(n.Labels),
			DeletionTimestamp: n.DeletionTimestamp,
		},
		Spec: corev1.NodeSpec{Unschedulable: n.Spec.Unschedulable, Taints: n.Spec.Taints, ProviderID: n.Spec.ProviderID},
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			out.Status.Conditions = []corev1.NodeCondition{{Type: c.Type, Status: c.Status}}
			break
		}
	}
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP || a.Type == corev1.NodeExternalIP {
			out.Status.Addresses = append(out.Status.Addresses, a)
		}
	}
	return out, nil
}

// internLabels copies labels with interned keys and values: nodes share most of them
// ("kubernetes.io/os": "linux", zone and instance-type labels), so each string is kept once.
func internLabels(in map[string]string) map[string]string {
	if in == nil {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[unique.Make(k).Value()] = unique.Make(v).Value()
	}
	return out
}

// nodeChange says what an update of a trimmed node changed of what Shardgate decides from: 0
// for kubelet heartbeats (they change only fields TrimNode drops), ChangeNodes for anything DNS
// reads, with ChangeNodeLabels when the labels changed (what shards' nodeSelectors match).
func nodeChange(a, b *corev1.Node) Change {
	if !maps.Equal(a.Labels, b.Labels) {
		return ChangeNodes | ChangeNodeLabels
	}
	if a.Spec.Unschedulable != b.Spec.Unschedulable || (a.DeletionTimestamp == nil) != (b.DeletionTimestamp == nil) ||
		!slices.Equal(a.Status.Addresses, b.Status.Addresses) || readyStatus(a) != readyStatus(b) ||
		!slices.EqualFunc(a.Spec.Taints, b.Spec.Taints, func(x, y corev1.Taint) bool { return x.Key == y.Key && x.Effect == y.Effect && x.Value == y.Value }) {
		return ChangeNodes
	}
	return 0
}

func readyStatus(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}

// TrimEndpointSlice is the cache transform for user-cluster EndpointSlices: the Service they
// belong to, their ports, and per endpoint only the node and the ready condition (what the
// routed-IP election reads); addresses, hints, zones and targets are dropped.
func TrimEndpointSlice(obj any) (any, error) {
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return obj, nil
	}
	out := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace, ResourceVersion: s.ResourceVersion,
			Labels: map[string]string{discoveryv1.LabelServiceName: s.Labels[discoveryv1.LabelServiceName]}},
		AddressType: s.AddressType,
		Ports:       s.Ports,
	}
	for _, e := range s.Endpoints {
		out.Endpoints = append(out.Endpoints, discoveryv1.Endpoint{NodeName: e.NodeName, Conditions: discoveryv1.EndpointConditions{Ready: e.Conditions.Ready}})
	}
	return out, nil
}
