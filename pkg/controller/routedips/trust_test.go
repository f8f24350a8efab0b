package routedips

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/names"
)

const addr2 = "203.0.113.11"

// TestClusterOwnerCannotSteerTheSeedsCredentials: O's cluster holds a Ready node whose
// providerID is the seed's instance (the youngest, so the election's first choice), an
// EndpointSlice of the shard's router Service naming 2379 and 10250, and a RoutedIP posing as a
// shard's in shardgate-system while the class takes no owners' RoutedIPs. The foreign node is
// never elected, the records carry only the shard's rendered ports, the posing RoutedIP is
// refused; a failed Job's output held in the seed's record does not reach the user cluster's
// status; and once the class turns unusable the holdings stay, frozen.
func TestClusterOwnerCannotSteerTheSeedsCredentials(t *testing.T) {
	ctx := context.Background()
	seed := controllertest.Seed(t)
	ns := controllertest.Namespace(t, seed.Client)
	job := batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "cloud"}}}}}
	class := &v1alpha1.ClusterRoutedIPClass{ObjectMeta: metav1.ObjectMeta{Name: "t-" + ns}, Spec: v1alpha1.ClusterRoutedIPClassSpec{
		Addresses: []string{"203.0.113.0/28"}, UpdateRoutedIP: job, UpdateFirewall: job,
		ProviderIDPattern: "p://{clusterID}-[a-z]+"}}
	must(t, seed.Client.Create(ctx, class))
	t.Cleanup(func() { _ = seed.Client.Delete(ctx, class) })
	ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c1"}, Spec: v1alpha1.ClusterIngressSpec{
		ClusterRef: v1alpha1.ClusterReference{Kind: v1alpha1.SourceKindSecret, Name: "c1"}, Profile: "p", ClusterID: "c1",
		DNS: v1alpha1.ResolveDNS(v1alpha1.DNSSettings{Zone: "z.test"}, ""),
		Shards: v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "edge", Publishing: v1alpha1.PublishRoutedIP,
			RoutedIP: &v1alpha1.RoutedIPSettings{ClassName: class.Name, Addresses: []string{addr, addr2}}}})}}
	must(t, seed.Client.Create(ctx, ci))
	// The seed is shared by the package's tests: a record left behind would hold its address.
	t.Cleanup(func() { forget(seed.Client, ci) })
	key := client.ObjectKeyFromObject(ci)
	const secret = "token=s3cr3t"
	finished := metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
	ci.Status.ClusterID = "c1"
	ci.Status.RoutedIPs = []v1alpha1.RoutedIPRecord{{Address: addr, ClassName: class.Name, RoutedIP: names.Namespace + "/" + names.RoutedIPName("edge", addr),
		Node: "old", ProviderID: "p://c1-old", LastJob: &v1alpha1.RoutedIPJobOutcome{Name: "j", Kind: "UpdateRoutedIP", Message: secret, FinishedTime: &finished}}}
	must(t, seed.Client.Status().Update(ctx, ci))

	now := time.Now()
	hostile := node("evil", now)
	hostile.Spec.ProviderID = "p://seed"
	own := func(name string, age time.Duration) *corev1.Node {
		n := node(name, now.Add(-age))
		n.Spec.ProviderID = "p://c1-" + name
		return n
	}
	slice := routerSlice("old", "mid", "evil")
	slice.Ports = append(slice.Ports, discoveryv1.EndpointPort{Port: ptr.To[int32](2379)}, discoveryv1.EndpointPort{Port: ptr.To[int32](10250)})
	posing := &v1alpha1.RoutedIP{ObjectMeta: metav1.ObjectMeta{Namespace: names.Namespace, Name: "posing",
		Labels: map[string]string{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue, v1alpha1.ShardLabel: "edge"}},
		Spec: v1alpha1.RoutedIPSpec{ClassName: class.Name, Address: "203.0.113.12", ServiceRef: v1alpha1.ServiceReference{Name: names.RouterName("edge")}}}
	access := clusteraccess.NewFake()
	u := controllertest.UserCluster(access, key, own("old", time.Hour), own("mid", time.Minute), hostile, slice, posing)
	u.Caps.CRDs = true
	r := &Reconciler{Client: seed.Client, APIReader: seed.Client, Access: access, JobNamespace: ns, Clock: clocktesting.NewFakePassiveClock(now), Recorder: events.NewFakeRecorder(100), Board: cistatus.NewBoard(seed.Client).WriteThrough()}

	controllertest.Reconcile(t, r, key, 2)
	held, moving := record(t, seed.Client, key, addr), record(t, seed.Client, key, addr2)
	if moving.MovingTo != "mid" || moving.MovingProviderID != "p://c1-mid" {
		t.Errorf("record %+v: want a move to mid, not to the node naming the seed's instance", moving)
	}
	for _, rec := range []v1alpha1.RoutedIPRecord{held, moving} {
		if got := fmt.Sprint(rec.Ports); got != "[{80 TCP} {443 TCP}]" {
			t.Errorf("%s ports %s: want the shard's rendered 80 and 443 only", rec.Address, got)
		}
	}
	// A RoutedIP posing as a shard's (Shardgate's labels in shardgate-system) is pruned as one the
	// shard spec does not ask for, or refused; never admitted.
	if err := u.Client.Get(ctx, client.ObjectKeyFromObject(posing), posing); err == nil && posing.Status.Phase != v1alpha1.RoutedIPRefused {
		t.Errorf("a RoutedIP posing as a shard's: %+v", posing.Status)
	} else if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	got := &v1alpha1.ClusterIngress{}
	must(t, seed.Client.Get(ctx, key, got))
	for _, rec := range got.Status.RoutedIPs {
		if rec.Address == "203.0.113.12" {
			t.Errorf("a RoutedIP posing as a shard's was recorded: %+v", rec)
		}
	}
	ri := &v1alpha1.RoutedIP{}
	must(t, u.Client.Get(ctx, types.NamespacedName{Namespace: names.Namespace, Name: names.RoutedIPName("edge", addr)}, ri))
	if ri.Status.LastJob == nil || strings.Contains(ri.Status.LastJob.Message, "s3cr3t") || ri.Status.AssignedNode != "old" {
		t.Errorf("user cluster status %+v: want the holder without the Job's output", ri.Status)
	}
	if rec := record(t, seed.Client, key, addr); rec.LastJob == nil || rec.LastJob.Message != secret {
		t.Errorf("the seed's record lost the Job's output: %+v", rec.LastJob)
	}

	// The class turns unusable (an operator's typo): the holdings stay, frozen.
	must(t, seed.Client.Get(ctx, client.ObjectKeyFromObject(class), class))
	class.Spec.NodePortRange = "5-2"
	must(t, seed.Client.Update(ctx, class))
	controllertest.Reconcile(t, r, key, 2)
	if rec := record(t, seed.Client, key, addr); rec.Node != "old" || rec.Reason != v1alpha1.ReasonClassInvalid {
		t.Errorf("record through an unusable class %+v: want old kept, reason ClassInvalid", rec)
	}
	assertTainted(t, u, "mid", "old")
}

func record(t *testing.T, c client.Client, key types.NamespacedName, address string) v1alpha1.RoutedIPRecord {
	t.Helper()
	ci := &v1alpha1.ClusterIngress{}
	must(t, c.Get(context.Background(), key, ci))
	for _, r := range ci.Status.RoutedIPs {
		if r.Address == address {
			return r
		}
	}
	t.Fatalf("no record of %s in %+v", address, ci.Status.RoutedIPs)
	return v1alpha1.RoutedIPRecord{}
}
