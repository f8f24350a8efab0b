package canary

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	canarycheck "github.com/shardgate/shardgate/pkg/canary"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/gatewayapi"
)

// TestCanaryThroughTheShardsGateway: where a shard's routers serve its Gateway, the canary also
// asks the Gateway's own canary host (which only the canary's HTTPRoute routes): a shard whose
// Ingress canary answers but whose Gateway does not is not serving, and the condition says it is
// the Gateway. Without Gateway API the Gateway's host is never asked.
func TestCanaryThroughTheShardsGateway(t *testing.T) {
	for _, tc := range []struct {
		name           string
		gatewayAPI     bool
		gatewayAnswers bool
		want           metav1.ConditionStatus
		asked          string
	}{
		{"Gateway API served, both answer", true, true, metav1.ConditionTrue, "shardgate-canary-gateway.c1.z.test"},
		{"Gateway API served, the Gateway does not answer", true, false, metav1.ConditionFalse, "shardgate-canary-gateway.c1.z.test"},
		{"no Gateway API: only the Ingress canary", false, false, metav1.ConditionTrue, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: "seed", Name: "c1"},
				Spec: v1alpha1.ClusterIngressSpec{Shards: v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default"}})},
				Status: v1alpha1.ClusterIngressStatus{Domain: "c1.z.test",
					Shards: []v1alpha1.ShardStatus{{Name: "default", ReadyReplicas: 1}}}}
			r, _ := reconcilerFor(t, ci, canarycheck.Refused{}, "198.51.100.7")
			key := client.ObjectKeyFromObject(ci)
			cluster, _ := r.Access.Get(key)
			cluster.(*clusteraccess.FakeCluster).Caps.GatewayAPI = gatewayapi.Availability{Served: tc.gatewayAPI}
			gatewayAsked := ""
			r.Get = func(_ context.Context, url, host string) (int, string, error) {
				if strings.HasPrefix(host, "shardgate-canary-gateway.") {
					gatewayAsked = host
					if !tc.gatewayAnswers {
						return 404, "404 page not found", nil
					}
				}
				return 200, "OK", nil
			}
			if _, err := r.Reconcile(context.Background(), controllertest.Request(key)); err != nil {
				t.Fatal(err)
			}
			ci = &v1alpha1.ClusterIngress{}
			if err := r.Client.Get(context.Background(), key, ci); err != nil {
				t.Fatal(err)
			}
			r.Board.Overlay(ci)
			c := meta.FindStatusCondition(ci.Status.Canaries[0].Conditions, v1alpha1.ConditionRoutesServing)
			if c == nil || c.Status != tc.want || gatewayAsked != tc.asked {
				t.Fatalf("RoutesServing %+v, Gateway host asked %q; want %s, %q", c, gatewayAsked, tc.want, tc.asked)
			}
			if c.Status == metav1.ConditionFalse && !strings.Contains(c.Message, "through the shard's Gateway") {
				t.Errorf("the condition does not say it is the Gateway: %s", c.Message)
			}
		})
	}
}
