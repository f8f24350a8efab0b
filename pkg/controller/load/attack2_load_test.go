package load

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/names"
)

// TestAttack2LoadWobbleWritesStatusEveryTenSeconds: Publish keeps a shard's figures while its
// utilization moves less than 10 points, so that steady load does not write the seed's status;
// but the scale decision (belowTargetSince) is taken on the fresh figure and is recorded with
// them: a load wobbling by one point across the scale-down boundary (3 routers, 60% target: 40%
// asks for 2, 41% for 3) sets and clears belowTargetSince on every reconcile, one seed status
// write per recheck (10 s) per cluster, from honest routers: 100 writes/s at 1,000 clusters;
// and the scale-down it keeps restarting never happens.
func TestAttack2LoadWobbleWritesStatusEveryTenSeconds(t *testing.T) {
	now := time.Unix(600000, 0)
	ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: "seed", Name: "wobble"},
		Spec: v1alpha1.ClusterIngressSpec{Shards: v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default",
			Publishing: v1alpha1.PublishNodePort,
			Load: &v1alpha1.ShardLoadSpec{RequestsPerSecond: ptr.To[int32](100), MaxReplicas: ptr.To[int32](5),
				TargetPercent: ptr.To[int32](60)}}})},
		Status: v1alpha1.ClusterIngressStatus{Domain: "c1.z.test", ShardLoad: []v1alpha1.ShardLoadStatus{{Shard: "default",
			State: v1alpha1.LoadNormal, UtilizationPercent: 41, ReportingRouters: 3, CapacityRequestsPerSecond: 100,
			RequestsPerSecond: 123, Replicas: 3}}}}
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	seed := fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(ci).WithObjects(ci).Build()
	access := clusteraccess.NewFake()
	key := client.ObjectKeyFromObject(ci)
	pods := []string{"r1", "r2", "r3"}
	objs := []client.Object{&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: names.Namespace,
		Name: names.RouterName("default")}, Status: appsv1.DeploymentStatus{ReadyReplicas: 3}}}
	for _, p := range pods {
		objs = append(objs, loadLease("default", p, "rps=41", now))
	}
	user := controllertest.UserCluster(access, key, objs...)
	r := &Reconciler{Client: seed, Access: access, Board: cistatus.NewBoard(seed).WriteThrough(),
		Recorder: events.NewFakeRecorder(100), Now: func() time.Time { return now }}
	get := func() *v1alpha1.ClusterIngress {
		got := &v1alpha1.ClusterIngress{}
		if err := seed.Get(context.Background(), key, got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	controllertest.Reconcile(t, r, key, 1)
	writes, last := 0, get().ResourceVersion
	const rounds = 12
	for i := range rounds {
		now = now.Add(recheck + time.Second)
		for _, p := range pods {
			l := &coordinationv1.Lease{}
			if err := user.Client.Get(context.Background(), client.ObjectKeyFromObject(loadLease("default", p, "", now)), l); err != nil {
				t.Fatal(err)
			}
			fresh := loadLease("default", p, fmt.Sprintf("rps=%d", 40+(i+1)%2), now)
			l.Annotations, l.Spec = fresh.Annotations, fresh.Spec
			if err := user.Client.Update(context.Background(), l); err != nil {
				t.Fatal(err)
			}
		}
		controllertest.Reconcile(t, r, key, 1)
		if v := get().ResourceVersion; v != last {
			writes, last = writes+1, v
		}
	}
	got := get()
	if writes > 2 {
		t.Errorf("utilization wobbling 40%%/41%% (published figures held at %d%%): %d seed status writes in %d rechecks; "+
			"replicas %d", got.Status.ShardLoad[0].UtilizationPercent, writes, rounds, got.Status.ShardLoad[0].Replicas)
	}
}

// TestAttack2LoadEligibleCountsNodesNoRouterCanTake: on the host network the eligible nodes bound
// the routers (one per node, required anti-affinity), but eligible counts every node its
// nodeSelector matches that is not cordoned: NotReady nodes and nodes with a NoSchedule taint the
// routers do not tolerate (control-plane nodes, with the default nil nodeSelector) count too. The
// routers scale onto nodes they cannot run on and stay Pending, and Replicas counts them as
// serving (routerload's TestAttack2LoadScaleUpCountsRoutersNotYetServing): a scale-up runs to
// the bound.
func TestAttack2LoadEligibleCountsNodesNoRouterCanTake(t *testing.T) {
	nodes := []corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "worker"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "control-plane"},
			Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "not-ready"},
			Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}}},
	}
	if got := eligible(nodes, v1alpha1.ShardSpec{}); got != 1 {
		t.Errorf("one node a router can take (a tainted control-plane node, a NotReady node besides): %d eligible", got)
	}
}
