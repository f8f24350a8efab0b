package load

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/routerload"
)

// TestAttackLoadUnreachableClusterStaysSaturatedForever: once a cluster cannot be observed, the
// load controller returns before deciding anything, so status.shardLoad keeps "Saturated" with
// its last figures and shardgate_shard_saturated stays 1 (utilization too, though its help says
// it is absent while the load is unknown): hours after the last report, ShardgateShardSaturated
// still pages "add routers" for a shard nobody has seen (stale load is meant to be Unknown).
func TestAttackLoadUnreachableClusterStaysSaturatedForever(t *testing.T) {
	now := time.Unix(200000, 0)
	ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: "seed", Name: "attack-unreachable"},
		Spec: v1alpha1.ClusterIngressSpec{Allocation: v1alpha1.AllocationSettings{Strategy: v1alpha1.StrategyLeastUtilized},
			Shards: v1alpha1.ResolveShards([]v1alpha1.ShardSpec{
				{Name: "default", Load: &v1alpha1.ShardLoadSpec{RequestsPerSecond: ptr.To[int32](10)}}})},
		Status: v1alpha1.ClusterIngressStatus{Domain: "c1.z.test"}}
	clock := now
	r, seed, user, _ := reconcilerFor(t, ci, &clock, routerDeployment("default", 1),
		loadLease("default", "r1", "rps=50", now))
	key := client.ObjectKeyFromObject(ci)
	controllertest.Reconcile(t, r, key, 1)
	if v := testutil.ToFloat64(saturatedGauge.WithLabelValues(key.String(), "default")); v != 1 {
		t.Fatalf("setup: saturated gauge %v", v)
	}

	user.St = clusteraccess.State{Phase: clusteraccess.PhaseUnreachable, Since: now}
	clock = now.Add(6 * time.Hour)
	controllertest.Reconcile(t, r, key, 1)

	got := &v1alpha1.ClusterIngress{}
	if err := seed.Get(context.Background(), key, got); err != nil {
		t.Fatal(err)
	}
	if v := testutil.ToFloat64(saturatedGauge.WithLabelValues(key.String(), "default")); v == 1 {
		t.Errorf("6 h without a report (cluster unreachable), shardgate_shard_saturated is still 1: the alert keeps paging")
	}
	for _, l := range got.Status.ShardLoad {
		if l.State != v1alpha1.LoadUnknown {
			t.Errorf("6 h without a report, status.shardLoad says %s at %d%%", l.State, l.UtilizationPercent)
		}
	}
}

// TestAttackLoadOwnerDrivesSeedStatusWrites: every write of a load Lease in the user cluster wakes
// the load controller (ChangeRouterLoad, unthrottled) and nothing bounds how often a shard's state
// may change, so O alternating one Lease between rps=0 and a high rate gets a seed status write
// (and a Warning Event in the seed namespace every second time) per Lease write: the seed's API
// server writes at the pace O chooses, for as many clusters as O owns.
func TestAttackLoadOwnerDrivesSeedStatusWrites(t *testing.T) {
	now := time.Unix(300000, 0)
	ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: "seed", Name: "attack-storm"},
		Spec: v1alpha1.ClusterIngressSpec{Shards: v1alpha1.ResolveShards([]v1alpha1.ShardSpec{
			{Name: "default", Load: &v1alpha1.ShardLoadSpec{RequestsPerSecond: ptr.To[int32](10)}}})},
		Status: v1alpha1.ClusterIngressStatus{Domain: "c1.z.test"}}
	r, seed, user, recorder := reconcilerFor(t, ci, &now, routerDeployment("default", 1),
		loadLease("default", "r1", "rps=0", now))
	key := client.ObjectKeyFromObject(ci)
	rv := func() string {
		got := &v1alpha1.ClusterIngress{}
		if err := seed.Get(context.Background(), key, got); err != nil {
			t.Fatal(err)
		}
		return got.ResourceVersion
	}
	controllertest.Reconcile(t, r, key, 1)
	writes, last := 0, rv()
	const flips = 20
	for i := range flips {
		value := "rps=0"
		if i%2 == 0 {
			value = "rps=10000"
		}
		l := &coordinationv1.Lease{}
		if err := user.Client.Get(context.Background(), client.ObjectKeyFromObject(loadLease("default", "r1", "", now)), l); err != nil {
			t.Fatal(err)
		}
		l.Annotations = map[string]string{routerload.ReportAnnotation: value}
		if err := user.Client.Update(context.Background(), l); err != nil {
			t.Fatal(err)
		}
		controllertest.Reconcile(t, r, key, 1) // the Lease write's ChangeRouterLoad wakes it
		if v := rv(); v != last {
			writes, last = writes+1, v
		}
	}
	if writes > flips/4 {
		t.Errorf("%d Lease writes in the user cluster, all within the same second: %d seed status writes and %d Events",
			flips, writes, len(recorder.Events))
	}
}

// TestAttackLoadDeletedClusterKeepsPaging: the load controller drops a cluster's series only when
// it sees the ClusterIngress with a deletionTimestamp; when it next sees it gone (the finalizers
// were removed before its queued reconcile ran: the update and the delete coalesce), it returns
// on NotFound and shardgate_shard_saturated stays 1 for a cluster that no longer exists, so
// ShardgateShardSaturated pages until the controller restarts (the canary controller forgets on
// NotFound).
func TestAttackLoadDeletedClusterKeepsPaging(t *testing.T) {
	now := time.Unix(400000, 0)
	ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: "seed", Name: "attack-deleted"},
		Spec: v1alpha1.ClusterIngressSpec{Shards: v1alpha1.ResolveShards([]v1alpha1.ShardSpec{
			{Name: "default", Load: &v1alpha1.ShardLoadSpec{RequestsPerSecond: ptr.To[int32](10)}}})},
		Status: v1alpha1.ClusterIngressStatus{Domain: "c1.z.test"}}
	r, seed, _, _ := reconcilerFor(t, ci, &now, routerDeployment("default", 1),
		loadLease("default", "r1", "rps=50", now))
	key := client.ObjectKeyFromObject(ci)
	controllertest.Reconcile(t, r, key, 1)
	if err := seed.Delete(context.Background(), &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{
		Namespace: key.Namespace, Name: key.Name}}); err != nil {
		t.Fatal(err)
	}
	controllertest.Reconcile(t, r, key, 1)
	if n := testutil.CollectAndCount(saturatedGauge); n > 0 {
		for _, c := range []string{key.String()} {
			if v := testutil.ToFloat64(saturatedGauge.WithLabelValues(c, "default")); v == 1 {
				t.Errorf("cluster %s is gone, shardgate_shard_saturated{cluster=%q} is still 1", c, c)
			}
		}
	}
}
