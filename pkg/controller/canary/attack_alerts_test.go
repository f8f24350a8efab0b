package canary

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	canarycheck "github.com/shardgate/shardgate/pkg/canary"
	"github.com/shardgate/shardgate/pkg/controllertest"
)

// TestAttackAlertsCanaryGaugeOfARemovedShardStays: shardgate_shard_routes_serving is set per
// shard of ci.Shards() and deleted only when the whole cluster goes or its canary is disabled.
// A shard that leaves the cluster (a tenant T's IngressClaim deleted with reclaimPolicy Delete,
// a claimed shard released, a profile shard renamed) keeps its last sample forever: if it was 0
// (the claim's routers never got ready), ShardgateCanaryFailing (critical) fires for a shard that
// no longer exists, until the controller restarts.
func TestAttackAlertsCanaryGaugeOfARemovedShardStays(t *testing.T) {
	ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: "seed", Name: "gone-shard"},
		Spec: v1alpha1.ClusterIngressSpec{Shards: v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default"}, {Name: "extra"}})},
		Status: v1alpha1.ClusterIngressStatus{Domain: "c1.z.test",
			Shards: []v1alpha1.ShardStatus{{Name: "default", ReadyReplicas: 1}, {Name: "extra", ReadyReplicas: 1}}}}
	r, seed := reconcilerFor(t, ci, canarycheck.Refused{}, "198.51.100.7")
	// The extra shard's routers answer 503: its canary fails (a requested check, sampled 0).
	r.Get = func(_ context.Context, a, b string) (int, string, error) {
		if strings.Contains(a+b, "extra") {
			return 503, "Service Unavailable", nil
		}
		return 200, "OK", nil
	}
	key := client.ObjectKeyFromObject(ci)
	controllertest.Reconcile(t, r, key, 1)
	if !sampledAt(t, key.String(), "extra", 0) {
		t.Fatal("extra: no sample 0 before its removal")
	}
	// The shard leaves the cluster.
	cur := &v1alpha1.ClusterIngress{}
	if err := seed.Get(context.Background(), key, cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.Shards = v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default"}})
	if err := seed.Update(context.Background(), cur); err != nil {
		t.Fatal(err)
	}
	controllertest.Reconcile(t, r, key, 1)
	if sampledAt(t, key.String(), "extra", 0) {
		t.Error("shardgate_shard_routes_serving of the removed shard \"extra\" is still exported (0): " +
			"ShardgateCanaryFailing fires for a shard that does not exist any more")
	}
	serving.DeletePartialMatch(map[string]string{"cluster": key.String()})
}

// TestAttackAlertsCanaryZeroForShardsNotChecked: ShardgateCanaryFailing (critical, for: 5m) says
// "the canary route does not answer", but the gauge is 0 for every non-True RoutesServing,
// including shards whose canary was never requested: NoRouterReady (a shard being provisioned, a
// tenant's IngressClaim whose router is still pending: T can page the operator at will),
// AddressRefused (the default policy refuses private node addresses unless
// --canary-allow-cidrs lists them: every on-prem cluster pages), CanaryPending.
func TestAttackAlertsCanaryZeroForShardsNotChecked(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ready   int32
		refused canarycheck.Refused
		addr    string
	}{
		{"no router ready yet (provisioning)", 0, canarycheck.Refused{}, "198.51.100.7"},
		{"private node address refused by default policy", 1, canarycheck.DefaultRefused(), "10.0.0.5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: "seed", Name: "not-checked"},
				Spec: v1alpha1.ClusterIngressSpec{Shards: v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default"}})},
				Status: v1alpha1.ClusterIngressStatus{Domain: "c1.z.test",
					Shards: []v1alpha1.ShardStatus{{Name: "default", ReadyReplicas: tc.ready}}}}
			r, _ := reconcilerFor(t, ci, tc.refused, tc.addr)
			key := client.ObjectKeyFromObject(ci)
			defer serving.DeletePartialMatch(map[string]string{"cluster": key.String()})
			controllertest.Reconcile(t, r, key, 1)
			c, _ := r.Board.Posted(key, v1alpha1.ConditionRoutesServing)
			if serving.DeleteLabelValues(key.String(), "default") {
				t.Errorf("RoutesServing %s/%s: the canary asked nothing, yet shardgate_shard_routes_serving is 0 and "+
					"ShardgateCanaryFailing (critical) fires after 5m (%s)", c.Status, c.Reason, c.Message)
			}
		})
	}
}

// sampledAt: the serving gauge has the sample for cluster and shard, with value v.
func sampledAt(t *testing.T, cluster, shard string, v float64) bool {
	t.Helper()
	out, err := testutil.CollectAndFormat(serving, expfmt.TypeTextPlain, "shardgate_shard_routes_serving")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(out), fmt.Sprintf(`{cluster=%q,shard=%q} %g`, cluster, shard, v))
}
