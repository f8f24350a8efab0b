package vips

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/vip"
	"github.com/shardgate/shardgate/test/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

func vipCI(t *testing.T, c client.Client, ns, name string, count int32) types.NamespacedName {
	t.Helper()
	ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.ClusterIngressSpec{
		ClusterRef: v1alpha1.ClusterReference{Kind: v1alpha1.SourceKindSecret, Name: name}, Profile: "p", ClusterID: name,
		DNS: v1alpha1.ResolveDNS(v1alpha1.DNSSettings{Zone: "z.test"}, ""),
		// The test's own L2 domain: other tests' clusters in the shared seed are not its business.
		VIP: v1alpha1.ClusterVIPSettings{L2Domain: ns},
		Shards: v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "edge", Publishing: v1alpha1.PublishVIP,
			VIP: &v1alpha1.VIPSettings{Pool: []string{"10.9.0.0/29"}, Count: count}}})}}
	if err := c.Create(context.Background(), ci); err != nil {
		t.Fatal(err)
	}
	return client.ObjectKeyFromObject(ci)
}

func vipsOf(t *testing.T, c client.Client, key types.NamespacedName) (string, *metav1.Condition) {
	t.Helper()
	ci := &v1alpha1.ClusterIngress{}
	if err := c.Get(context.Background(), key, ci); err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, s := range ci.Status.VIPs {
		for _, a := range s.Addresses {
			parts = append(parts, fmt.Sprintf("%s#%d@%s", a.Address, a.RouterID, a.Holder))
		}
	}
	return strings.Join(parts, " "), meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionVIPsAvailable)
}

// lease is node's agent's report that it holds held.
func lease(shard, node string, renewed time.Time, held ...string) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: names.Namespace, Name: names.VIPNodeLeaseName(shard, node),
		Labels: names.RouterSelector(shard), Annotations: map[string]string{vip.ReportHeldAnnotation: strings.Join(held, ",")}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(node), LeaseDurationSeconds: ptr.To[int32](6), RenewTime: &metav1.MicroTime{Time: renewed}}}
}

func TestVIPsAllocatedObservedAndReleased(t *testing.T) {
	seed := controllertest.Seed(t)
	ns := controllertest.Namespace(t, seed.Client)
	access := clusteraccess.NewFake()
	now := time.Now()
	clock := clocktesting.NewFakePassiveClock(now)
	r := &Reconciler{Client: seed.Client, Access: access, Clock: clock, Board: cistatus.NewBoard(seed.Client).WriteThrough()}
	a := vipCI(t, seed.Client, ns, "a", 2)
	time.Sleep(1100 * time.Millisecond) // creation timestamps have one-second resolution: a is older
	b := vipCI(t, seed.Client, ns, "b", 1)
	ua := controllertest.UserCluster(access, a)
	ub := controllertest.UserCluster(access, b)

	// The newer cluster reconciled first still leaves the older one the lowest addresses.
	controllertest.Reconcile(t, r, b, 1)
	controllertest.Reconcile(t, r, a, 1)
	if got, c := vipsOf(t, seed.Client, a); got != "10.9.0.1#1@ 10.9.0.2#2@" || c.Reason != v1alpha1.ReasonVIPsNotHeld {
		t.Fatalf("a: %s %+v", got, c)
	}
	if got, _ := vipsOf(t, seed.Client, b); got != "10.9.0.3#3@" {
		t.Fatalf("b: %s", got)
	}

	// Holders come from fresh Leases naming a node of the cluster; a stale one is no holder.
	for _, n := range []string{"n1", "n2"} {
		must(t, ua.Client.Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}))
	}
	notNode := lease("edge", "not-a-node", now, "10.9.0.1")
	notNode.Spec.HolderIdentity = ptr.To("not a node\n<script>")
	must(t, ua.Client.Create(context.Background(), notNode))
	controllertest.Reconcile(t, r, a, 1)
	if got, _ := vipsOf(t, seed.Client, a); got != "10.9.0.1#1@ 10.9.0.2#2@" {
		t.Fatalf("a Lease naming no node of the cluster made a holder: %s", got)
	}
	// A node's Lease under another node's name is no report either.
	forged := lease("edge", "n2", now, "10.9.0.1")
	forged.Name = names.VIPNodeLeaseName("edge", "n9")
	must(t, ua.Client.Create(context.Background(), forged))
	must(t, ua.Client.Create(context.Background(), lease("edge", "n1", now, "10.9.0.1")))
	must(t, ua.Client.Create(context.Background(), lease("edge", "n2", now.Add(-time.Minute), "10.9.0.2")))
	res := controllertest.Reconcile(t, r, a, 1)
	if got, c := vipsOf(t, seed.Client, a); got != "10.9.0.1#1@n1 10.9.0.2#2@" || c.Status != metav1.ConditionFalse {
		t.Fatalf("a with one fresh Lease: %s %+v", got, c)
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > 6*time.Second {
		t.Errorf("a fresh holder is looked at again when its Lease would expire: %s", res.RequeueAfter)
	}
	l := &coordinationv1.Lease{}
	must(t, ua.Client.Get(context.Background(), client.ObjectKey{Namespace: names.Namespace, Name: names.VIPNodeLeaseName("edge", "n2")}, l))
	l.Spec.RenewTime = &metav1.MicroTime{Time: now}
	must(t, ua.Client.Update(context.Background(), l))
	controllertest.Reconcile(t, r, a, 1)
	if got, c := vipsOf(t, seed.Client, a); got != "10.9.0.1#1@n1 10.9.0.2#2@n2" || c.Status != metav1.ConditionTrue || c.Message != "10.9.0.1 on n1, 10.9.0.2 on n2" {
		t.Fatalf("a held: %s %+v", got, c)
	}
	// Two nodes reporting one VIP (a split: both are master) is a condition naming both, not
	// whichever wrote last.
	must(t, ua.Client.Get(context.Background(), client.ObjectKey{Namespace: names.Namespace, Name: names.VIPNodeLeaseName("edge", "n2")}, l))
	l.Annotations[vip.ReportHeldAnnotation] = "10.9.0.1,10.9.0.2"
	must(t, ua.Client.Update(context.Background(), l))
	controllertest.Reconcile(t, r, a, 1)
	if got, c := vipsOf(t, seed.Client, a); got != "10.9.0.1#1@ 10.9.0.2#2@n2" || c.Status != metav1.ConditionFalse ||
		c.Reason != v1alpha1.ReasonDuplicateHolder || !strings.Contains(c.Message, "10.9.0.1 is held by n1 and n2") {
		t.Fatalf("a split VIP: %s %+v", got, c)
	}
	clock.SetTime(now.Add(10 * time.Second))
	controllertest.Reconcile(t, r, a, 1)
	if got, _ := vipsOf(t, seed.Client, a); got != "10.9.0.1#1@ 10.9.0.2#2@" {
		t.Fatalf("holders after the Leases expired: %s", got)
	}

	// Homes spread over the nodes running the shard's routers and stay while their node does.
	router := func(name, node, ip string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: names.Namespace, Name: name, Labels: names.RouterSelector("edge")},
			Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{HostIP: ip}}
	}
	homes := func() string {
		ci := &v1alpha1.ClusterIngress{}
		must(t, seed.Client.Get(context.Background(), a, ci))
		var out []string
		for _, addr := range ci.Status.VIPs[0].Addresses {
			out = append(out, addr.Home)
		}
		return strings.Join(out, ",")
	}
	must(t, ua.Client.Create(context.Background(), router("r1", "n1", "10.0.9.1")))
	controllertest.Reconcile(t, r, a, 1)
	if h := homes(); h != "n1,n1" {
		t.Fatalf("homes with one router: %s", h)
	}
	must(t, ua.Client.Create(context.Background(), router("r3", "n3", "10.0.9.3")))
	controllertest.Reconcile(t, r, a, 1)
	if h := homes(); h != "n1,n3" {
		t.Fatalf("homes with two routers: %s", h)
	}
	// n3's router moves to n2: the VIP homed on n1 stays, the other follows the router.
	must(t, ua.Client.Delete(context.Background(), router("r3", "n3", "")))
	must(t, ua.Client.Create(context.Background(), router("r2", "n2", "10.0.9.2")))
	controllertest.Reconcile(t, r, a, 1)
	if h := homes(); h != "n1,n2" {
		t.Fatalf("homes after a router moved: %s", h)
	}

	// A node of a reports b's VIP (O of a wrote it into its node status): b keeps its VIP, and a,
	// whose node it is, is told.
	must(t, ua.Client.Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n9"},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.9.0.3"}}}}))
	controllertest.Reconcile(t, r, b, 1)
	if got, c := vipsOf(t, seed.Client, b); got != "10.9.0.3#3@" || c.Reason != v1alpha1.ReasonVIPsNotHeld {
		t.Fatalf("b after another cluster's node reported its VIP: %s %+v", got, c)
	}
	controllertest.Reconcile(t, r, a, 1)
	got, c := vipsOf(t, seed.Client, a)
	// a's own VIPs are held by no agent here, which is graver and leads (the alerts page on it);
	// the conflict is told in the message all the same.
	if got != "10.9.0.1#1@ 10.9.0.2#2@" || c.Reason != v1alpha1.ReasonVIPsNotHeld ||
		!strings.Contains(c.Message, "node n9 of "+ns+"/a reports 10.9.0.3, a VIP of "+ns+"/b") {
		t.Fatalf("a, whose node reports b's VIP: %s %+v", got, c)
	}
	// b's own VIP on b's own node (a cloud provider reporting every NIC address) changes nothing.
	must(t, ub.Client.Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n8"},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.9.0.3"}}}}))
	must(t, ua.Client.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n9"}}))
	controllertest.Reconcile(t, r, b, 1)
	if got, c := vipsOf(t, seed.Client, b); got != "10.9.0.3#3@" || c.Reason != v1alpha1.ReasonVIPsNotHeld {
		t.Fatalf("b with its own VIP on its own node: %s %+v", got, c)
	}

	// The VIP shard removed: its VIPs are released and the condition goes.
	ci := &v1alpha1.ClusterIngress{}
	must(t, seed.Client.Get(context.Background(), a, ci))
	ci.Spec.Shards = v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "edge"}})
	must(t, seed.Client.Update(context.Background(), ci))
	controllertest.Reconcile(t, r, a, 1)
	if got, c := vipsOf(t, seed.Client, a); got != "" || c != nil {
		t.Fatalf("a without VIP shards: %q %+v", got, c)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
