package routedips

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/test/framework"
)

// TestAddressClaimedThroughAPIServer: cluster a claimed the address in the seed (its Lease), but
// its record is not (yet) in the status b's pass reads (a lagging cache, or another replica):
// b is refused and records nothing. Once a is gone, b takes the address over.
func TestAddressClaimedThroughAPIServer(t *testing.T) {
	ctx := context.Background()
	c := setUpAddressClaim(t, func(ns string) string { return ns + "/a" })
	seed, ns, a, b, r := c.seed, c.ns, c.a, c.b, c.r

	controllertest.Reconcile(t, r, client.ObjectKeyFromObject(b), 2)
	got := &v1alpha1.ClusterIngress{}
	must(t, seed.Client.Get(ctx, client.ObjectKeyFromObject(b), got))
	if len(got.Status.RoutedIPs) != 0 {
		t.Fatalf("b recorded %+v while a claims %s", got.Status.RoutedIPs, addr)
	}

	must(t, seed.Client.Delete(ctx, a))
	controllertest.Reconcile(t, r, client.ObjectKeyFromObject(b), 2)
	rec := record(t, seed.Client, client.ObjectKeyFromObject(b), addr)
	l := &coordinationv1.Lease{}
	must(t, seed.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: addressLeaseName(addr)}, l))
	if rec.MovingTo != "n1" || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != ns+"/b" {
		t.Errorf("after a went: record %+v, lease holder %v", rec, l.Spec.HolderIdentity)
	}
}

// TestAddressLeaseNamingNoClusterIsFree: a Lease whose holder names no cluster ("" or no
// namespace/name) holds nothing: b takes the address (reviewed main failed b's every pass on a
// Get with an empty name).
func TestAddressLeaseNamingNoClusterIsFree(t *testing.T) {
	for _, holder := range []string{"", "not-a-cluster", "/"} {
		t.Run(holder, func(t *testing.T) {
			c := setUpAddressClaim(t, func(string) string { return holder })
			controllertest.Reconcile(t, c.r, client.ObjectKeyFromObject(c.b), 2)
			if rec := record(t, c.seed.Client, client.ObjectKeyFromObject(c.b), addr); rec.MovingTo != "n1" {
				t.Errorf("holder %q: b's record %+v", holder, rec)
			}
		})
	}
}

type addressClaim struct {
	seed *framework.ControlPlane
	ns   string
	a, b *v1alpha1.ClusterIngress
	r    *Reconciler
}

// setUpAddressClaim: clusters a and b in a namespace of their own, both asking for addr, whose
// Lease names holderOf(namespace) as its holder; r reconciles b.
func setUpAddressClaim(t *testing.T, holderOf func(ns string) string) addressClaim {
	ctx := context.Background()
	seed := controllertest.Seed(t)
	ns := controllertest.Namespace(t, seed.Client)
	job := batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "cloud"}}}}}
	class := &v1alpha1.ClusterRoutedIPClass{ObjectMeta: metav1.ObjectMeta{Name: "l-" + ns}, Spec: v1alpha1.ClusterRoutedIPClassSpec{
		Addresses: []string{"203.0.113.0/28"}, UpdateRoutedIP: job, UpdateFirewall: job, ProviderIDPattern: "p://[a-z0-9]+"}}
	must(t, seed.Client.Create(ctx, class))
	t.Cleanup(func() { _ = seed.Client.Delete(ctx, class) })
	mk := func(name string) *v1alpha1.ClusterIngress {
		ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.ClusterIngressSpec{
			ClusterRef: v1alpha1.ClusterReference{Kind: v1alpha1.SourceKindSecret, Name: name}, Profile: "p", ClusterID: name,
			DNS: v1alpha1.ResolveDNS(v1alpha1.DNSSettings{Zone: "z.test"}, ""),
			Shards: v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "edge", Publishing: v1alpha1.PublishRoutedIP,
				RoutedIP: &v1alpha1.RoutedIPSettings{ClassName: class.Name, Addresses: []string{addr}}}})}}
		must(t, seed.Client.Create(ctx, ci))
		// The seed is shared by the package's tests: a record left behind would hold its address.
		t.Cleanup(func() { forget(seed.Client, ci) })
		return ci
	}
	a, b := mk("a"), mk("b")
	holder := holderOf(ns)
	must(t, seed.Client.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: addressLeaseName(addr)},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}))
	now := time.Now()
	access := clusteraccess.NewFake()
	u := controllertest.UserCluster(access, client.ObjectKeyFromObject(b), node("n1", now), routerSlice("n1"))
	u.Caps.CRDs = true
	r := &Reconciler{Client: seed.Client, APIReader: seed.Client, Access: access, JobNamespace: ns,
		Clock: clocktesting.NewFakePassiveClock(now), Recorder: events.NewFakeRecorder(100), Board: cistatus.NewBoard(seed.Client).WriteThrough()}
	return addressClaim{seed: seed, ns: ns, a: a, b: b, r: r}
}
