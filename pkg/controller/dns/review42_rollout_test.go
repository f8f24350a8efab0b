package dns

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/dnsrecords"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/render"
)

func review42Node(name, ip string) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}}}
}

func review42Router(name, node string, readySince time.Time, deleting bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: names.Namespace, Name: name,
		Labels: map[string]string{v1alpha1.ShardLabel: "default", v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue}},
		Spec: corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady,
			Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(readySince)}}}}
	if deleting {
		p.DeletionTimestamp = &metav1.Time{Time: readySince}
		p.Finalizers = []string{"review42/keep"} // the fake client keeps a deleting object only with one
	}
	return p
}

// TestReview42RolloutOutrunsTheSettleAndEmptiesTheRecords (Medium; who: nobody, a routine router
// rollout: a release that changes the router's spec, an image bump, a kubectl rollout restart by O).
//
// What: a HostNetwork router Deployment rolls with maxSurge 0 / maxUnavailable 1 and no
// minReadySeconds, so the Deployment controller deletes the next old router the moment the new one
// turns Ready. Since b9ae69c that is 5 s BEFORE DNS admits the new one (f91aae7's successThreshold 2
// made the Deployment itself wait). With two replicas: old A (n1) was replaced, so DNS holds {n2};
// new A' on n1 turns Ready at t0, the Deployment deletes B (n2) at t0; DNS then has no admitted
// router: with emptyTargets: Remove the shard's records are deleted for ~5 s in the middle of a
// rollout (NoReadyNodes), with KeepLast they point only at the router that is shutting down and
// DNSPublished says NoReadyNodesKeptLastTargets at every rollout. Before b9ae69c the new router
// entered DNS before the old one was deleted: records were never empty.
//
// Fix: give the router Deployment spec.minReadySeconds = ceil(settle) (5 for Traefik). It is in
// the Deployment spec, not the pod template, so changing it replaces no router at the upgrade,
// and the rollout again waits for the new router to be published before taking the next one away.
func TestReview42RolloutOutrunsTheSettleAndEmptiesTheRecords(t *testing.T) {
	shard := v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default", Replicas: ptrTo[int32](2)}})[0]
	objs, err := render.RenderShard(render.Traefik{}, render.RenderInput{Domain: "c1.z.test", Shard: shard, DNSTTL: 60})
	if err != nil {
		t.Fatal(err)
	}
	var d *appsv1.Deployment
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			d = &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d); err != nil {
				t.Fatal(err)
			}
		}
	}
	if d == nil || d.Spec.Strategy.RollingUpdate == nil || d.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue() != 1 {
		t.Fatalf("premise: a HostNetwork router rolls one at a time (maxUnavailable 1): %+v", d)
	}
	// The Deployment controller deletes the next old router once the new one is available:
	// Ready for minReadySeconds.
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	deleteB := t0.Add(time.Duration(d.Spec.MinReadySeconds) * time.Second)
	now := deleteB.Add(200 * time.Millisecond) // the DNS pass the deletion wakes

	nodes := []corev1.Node{review42Node("n1", "10.0.0.1"), review42Node("n2", "10.0.0.2")}
	pods := []client.Object{review42Router("router-default-new-a", "n1", t0, false),
		review42Router("router-default-old-b", "n2", t0.Add(-time.Hour), true)}
	rd := fake.NewClientBuilder().WithObjects(pods...).Build()
	ins, _, _, err := shardInputs(context.Background(), rd, "c1.z.test", []v1alpha1.ShardSpec{shard}, nodes, nil, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	// Published before: n2 only (old A on n1 was the first replaced).
	current := []dnsrecords.Endpoint{
		{DNSName: "*.c1.z.test", RecordType: "A", RecordTTL: 60, Targets: []string{"10.0.0.2"}},
		{DNSName: "c1.z.test", RecordType: "A", RecordTTL: 60, Targets: []string{"10.0.0.2"}}}
	for _, policy := range []v1alpha1.EmptyTargetsPolicy{v1alpha1.EmptyTargetsRemove, v1alpha1.EmptyTargetsKeepLast} {
		spec := v1alpha1.ClusterIngressSpec{ClusterID: "c1",
			DNS: v1alpha1.ResolveDNS(v1alpha1.DNSSettings{Zone: "z.test", EmptyTargets: policy}, ""), Shards: []v1alpha1.ShardSpec{shard}}
		dec := Decide(Input{Domain: "c1.z.test", Spec: spec, Held: true, Engaged: true, Observed: true,
			CurrentExists: true, Current: current, Shards: ins})
		var serving []string
		for _, tg := range dec.Plan.Targets {
			if tg == "10.0.0.1" { // the only router that is not shutting down
				serving = append(serving, tg)
			}
		}
		if len(serving) == 0 {
			t.Errorf("emptyTargets %s: %s after the rollout deleted the old router (minReadySeconds %d, settle 5s), "+
				"DNS answers %v (%s: %s): no router that is not shutting down is published",
				policy, now.Sub(t0), d.Spec.MinReadySeconds, dec.Plan.Targets, dec.Published.Reason, dec.Published.Message)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestReview42SettlingRouterIsExplainedNowhere (Low; who: the operator at 3 a.m.).
//
// What: a new cluster's first router (or every router of a shard after a restart) is Ready, the
// Deployment says 1/1 ready, `kubectl get pods` says Ready, yet for its settle DNSPublished says
// "no ingress node is ready; no records are published" (or "a shard has no ready target" with
// KeepLast), and status.shards[].nodesLeftOut does not name its healthy node (LeftOut only names
// node faults). The reason (the Traefik settle) appears nowhere: not in conditions, nodesLeftOut,
// doctor or a log line. Transient (≤5 s) but it contradicts what kubectl shows, and doctor has
// nothing to say if the operator races it (or if a kubelet keeps rewriting the transition).
//
// Fix: name the node with a reason such as RouterSettling in nodesLeftOut (or say "n router(s)
// ready, entering DNS within Ns" in the DNSPublished message) while a router settles.
func TestReview42SettlingRouterIsExplainedNowhere(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 2, 0, time.UTC)
	shard := v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default"}})[0]
	rd := fake.NewClientBuilder().WithObjects(review42Router("router-default-a", "n1", now.Add(-2*time.Second), false)).Build()
	ins, _, recheck, err := shardInputs(context.Background(), rd, "c1.z.test", []v1alpha1.ShardSpec{shard},
		[]corev1.Node{review42Node("n1", "10.0.0.1")}, nil, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	if recheck == 0 {
		t.Fatal("premise: the router is settling")
	}
	dec := Decide(Input{Domain: "c1.z.test", Spec: v1alpha1.ClusterIngressSpec{ClusterID: "c1",
		DNS: v1alpha1.ResolveDNS(v1alpha1.DNSSettings{Zone: "z.test"}, ""), Shards: []v1alpha1.ShardSpec{shard}},
		Held: true, Engaged: true, Observed: true, Shards: ins, Settling: recheck})
	named := false
	for _, s := range dec.Plan.Shards {
		for _, l := range s.LeftOut {
			named = named || l.Name == "n1"
		}
	}
	msg := strings.ToLower(dec.Published.Message)
	if !named && !strings.Contains(msg, "settl") {
		t.Errorf("a Ready router settling for %s more is explained nowhere: DNSPublished %s %q, nodesLeftOut %+v",
			recheck, dec.Published.Reason, dec.Published.Message, dec.Plan.Shards[0].LeftOut)
	}
}
