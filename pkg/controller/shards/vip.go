package shards

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/render"
)

// vipInputs gathers, per VIP shard, its allocated VIPs (status, written by the VIP controller)
// and the nodes its router pods run on now (name → address), which keepalived's unicast peers
// and priorities are rendered from: a router that moves changes the peers, not the VIPs.
func vipInputs(ctx context.Context, rd client.Reader, ci *v1alpha1.ClusterIngress, shards []v1alpha1.ShardSpec) (map[string]*render.VIPInput, error) {
	var out map[string]*render.VIPInput
	for _, s := range shards {
		if s.Publishing != v1alpha1.PublishVIP {
			continue
		}
		pods := &corev1.PodList{}
		if err := rd.List(ctx, pods, client.InNamespace(names.Namespace), client.MatchingLabels(names.RouterSelector(s.Name))); err != nil {
			return nil, err
		}
		nodes := map[string]string{}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Spec.NodeName != "" && p.Status.HostIP != "" {
				nodes[p.Spec.NodeName] = p.Status.HostIP
			}
		}
		var addrs []v1alpha1.VIPAddress
		for _, v := range ci.Status.VIPs {
			if v.Shard == s.Name {
				addrs = v.Addresses
			}
		}
		if out == nil {
			out = map[string]*render.VIPInput{}
		}
		out[s.Name] = render.VIPInputFor(addrs, nodes)
	}
	return out, nil
}
