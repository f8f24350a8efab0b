package load

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/pkg/routerload"
)

// follow decides, for each shard whose routers follow load, how many run (routerload.Replicas),
// into loads (the published figures, so that a load wobbling within a step decides nothing new);
// the shard controller renders them (ClusterIngress.Shards). It returns what changed, for Events.
func follow(ctx context.Context, rd client.Reader, ci *v1alpha1.ClusterIngress, shards []v1alpha1.ShardSpec,
	loads []v1alpha1.ShardLoadStatus, now time.Time,
) ([]string, error) {
	var scaled []string
	least := map[string]int32{}
	for _, s := range ci.Spec.ShardsOrDefault() {
		if s.Replicas != nil {
			least[s.Name] = *s.Replicas
		}
	}
	var nodes *corev1.NodeList
	for i, s := range shards {
		min, ok := least[s.Name]
		if s.Load.MaxReplicas == nil || !ok {
			continue // claimed shards run what their claim admitted
		}
		if nodes == nil {
			nodes = &corev1.NodeList{}
			if err := rd.List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
				return nil, err
			}
		}
		ready, err := readyRouters(ctx, rd, s.Name)
		if err != nil {
			return nil, err
		}
		last := previous(ci.Status.ShardLoad, s.Name)
		sc := render.FollowedScale(s, min, ready, eligible(nodes.Items, s), last)
		replicas, below := routerload.Replicas(sc, loads[i], now)
		loads[i].Replicas, loads[i].BelowTargetSince = replicas, below
		if last != nil && last.Replicas > 0 && last.Replicas != replicas {
			scaled = append(scaled, fmt.Sprintf("shard %s: %d → %d routers (%d%% per router against a target of %d%%)",
				s.Name, last.Replicas, replicas, loads[i].UtilizationPercent, sc.Target))
		}
	}
	return scaled, nil
}

// eligible counts the nodes a shard's routers may take (render.RouterMayRun).
func eligible(nodes []corev1.Node, s v1alpha1.ShardSpec) int32 {
	var n int32
	for i := range nodes {
		if render.RouterMayRun(s, &nodes[i]) {
			n++
		}
	}
	return n
}

func previous(loads []v1alpha1.ShardLoadStatus, shard string) *v1alpha1.ShardLoadStatus {
	for i := range loads {
		if loads[i].Shard == shard {
			return &loads[i]
		}
	}
	return nil
}
