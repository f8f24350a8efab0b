package routerload

import (
	"context"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
)

// Reports reads the routers' load reports from a user cluster's cache, by shard. A Lease counts
// only under the name its holder's report must have (names.RouterLoadLeaseName), so one Lease
// cannot report for another shard's router.
func Reports(ctx context.Context, rd client.Reader, now time.Time) (map[string][]Report, error) {
	leases := &coordinationv1.LeaseList{}
	if err := rd.List(ctx, leases, client.InNamespace(names.Namespace),
		client.MatchingLabels{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := map[string][]Report{}
	for i := range leases.Items {
		l := &leases.Items[i]
		shard := l.Labels[v1alpha1.ShardLabel]
		if !strings.HasPrefix(l.Name, names.RouterLoadLeasePrefix) || shard == "" {
			continue
		}
		if r, ok := ParseLease(l, now); ok && l.Name == names.RouterLoadLeaseName(shard, r.Pod) {
			out[shard] = append(out[shard], r)
		}
	}
	return out, nil
}
