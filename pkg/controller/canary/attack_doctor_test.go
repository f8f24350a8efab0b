package canary

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	canarycheck "github.com/shardgate/shardgate/pkg/canary"
	"github.com/shardgate/shardgate/pkg/controllertest"
)

// A cluster that loses its domain (identity clears status.domain when two statuses hold one
// domain and the older keeps it: clusterid.Decide) is returned from early ("no names yet") with
// its serving samples and status.canaries untouched: a 0 keeps ShardgateCanaryFailing firing
// for names the cluster no longer has (and a 1 keeps hiding nothing), until the controller restarts.
func TestAttackDoctorCanaryGaugeKeptWhenDomainLost(t *testing.T) {
	ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: "seed", Name: "lost-domain"},
		Spec: v1alpha1.ClusterIngressSpec{Shards: v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default"}})},
		Status: v1alpha1.ClusterIngressStatus{Domain: "c1.z.test",
			Shards: []v1alpha1.ShardStatus{{Name: "default", ReadyReplicas: 1}}}}
	r, seed := reconcilerFor(t, ci, canarycheck.Refused{}, "198.51.100.7")
	r.Get = func(context.Context, string, string) (int, string, error) { return 503, "", nil }
	key := client.ObjectKeyFromObject(ci)
	defer forgetServing(key.String())
	controllertest.Reconcile(t, r, key, 1)
	if !sampledAt(t, key.String(), "default", 0) {
		t.Fatal("no sample 0 before the domain is lost")
	}
	cur := &v1alpha1.ClusterIngress{}
	if err := seed.Get(context.Background(), key, cur); err != nil {
		t.Fatal(err)
	}
	cur.Status.Domain = ""
	if err := seed.Status().Update(context.Background(), cur); err != nil {
		t.Fatal(err)
	}
	r.Board.Forget(key)
	controllertest.Reconcile(t, r, key, 1)
	if sampledAt(t, key.String(), "default", 0) {
		t.Error("the cluster holds no domain any more, yet its canary sample 0 stays: ShardgateCanaryFailing keeps firing")
	}
}
