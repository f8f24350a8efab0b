package dns

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controller/identity"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/dnsrecords"
	"github.com/shardgate/shardgate/test/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

// dnsAndIdentity runs the identity controller, then the DNS controller, as the manager does on a
// cluster's changes: the DNS controller publishes only for the domain the identity controller
// gave the cluster, through the same board.
type dnsAndIdentity struct {
	*Reconciler
	identity *identity.Reconciler
}

func withIdentity(r *Reconciler) dnsAndIdentity {
	return dnsAndIdentity{Reconciler: r, identity: &identity.Reconciler{Client: r.Client, ServedZones: r.ServedZones, Board: r.Board}}
}

func (r dnsAndIdentity) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if _, err := r.identity.Reconcile(ctx, req); err != nil {
		return ctrl.Result{}, err
	}
	return r.Reconciler.Reconcile(ctx, req)
}

func readyNode(name, ip string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}}}
}

func newCI(t *testing.T, c client.Client, ns, name, id string) types.NamespacedName {
	t.Helper()
	ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec(id, "dns.test")}
	ci.Spec.ClusterRef = v1alpha1.ClusterReference{Kind: v1alpha1.SourceKindSecret, Name: name}
	ci.Spec.Profile = "p"
	if err := c.Create(context.Background(), ci); err != nil {
		t.Fatal(err)
	}
	return client.ObjectKeyFromObject(ci)
}

func get(t *testing.T, c client.Client, key types.NamespacedName) (*v1alpha1.ClusterIngress, *dnsrecords.DNSEndpoint) {
	t.Helper()
	ci := &v1alpha1.ClusterIngress{}
	if err := c.Get(context.Background(), key, ci); err != nil {
		t.Fatal(err)
	}
	ep := &dnsrecords.DNSEndpoint{}
	if err := c.Get(context.Background(), key, ep); err != nil {
		if !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		ep = nil
	}
	return ci, ep
}

func publishedOf(t *testing.T, ci *v1alpha1.ClusterIngress) *metav1.Condition {
	t.Helper()
	return meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionDNSPublished)
}

func TestRecordsFollowTheClusterAndStayWithTheirHolder(t *testing.T) {
	seed := controllertest.Seed(t)
	ns := controllertest.Namespace(t, seed.Client)
	access := clusteraccess.NewFake()
	cached := controllertest.CachedClient(t, seed, identity.AddIndexes)
	r := withIdentity(&Reconciler{Client: cached, Access: access, ServedZones: []string{"dns.test"}, Clock: clocktesting.NewFakeClock(time.Now()), Board: cistatus.NewBoard(seed.Client).WriteThrough()})

	holder := newCI(t, seed.Client, ns, "holder", "c1")
	user := controllertest.UserCluster(access, holder, readyNode("n1", "10.0.0.1"), readyNode("n2", "10.0.0.2"))
	controllertest.ReconcileUntil(t, r, holder, publishedWith(t, seed.Client, holder, v1alpha1.ReasonPublished))
	ci, ep := get(t, seed.Client, holder)
	if ep == nil || ci.Status.Domain != "c1.dns.test" || !slices.Equal(ci.Status.Targets, []string{"10.0.0.1", "10.0.0.2"}) ||
		publishedOf(t, ci).Reason != v1alpha1.ReasonPublished || !controllerHas(ci, v1alpha1.DNSCleanupFinalizer) {
		t.Fatalf("status %+v endpoint %v", ci.Status, ep)
	}
	names := map[string]bool{}
	for _, e := range ep.Spec.Endpoints {
		names[e.DNSName] = true
	}
	if !names["c1.dns.test"] || !names["*.c1.dns.test"] {
		t.Fatalf("records %+v", ep.Spec.Endpoints)
	}

	// A newcomer asking for the held ID, whatever its age, gets ClusterIDConflict and no records.
	newcomer := newCI(t, seed.Client, ns, "newcomer", "c1")
	controllertest.UserCluster(access, newcomer, readyNode("x", "10.9.9.9"))
	controllertest.ReconcileUntil(t, r, newcomer, publishedWith(t, seed.Client, newcomer, v1alpha1.ReasonClusterIDConflict))
	nci, nep := get(t, seed.Client, newcomer)
	if nep != nil || publishedOf(t, nci).Reason != v1alpha1.ReasonClusterIDConflict || nci.Status.Domain != "" {
		t.Fatalf("newcomer: %+v endpoint %v", nci.Status, nep)
	}
	controllertest.Reconcile(t, r, holder, 1)
	if _, still := get(t, seed.Client, holder); still == nil {
		t.Fatal("the holder's records were touched by the contest")
	}

	// A node leaves: the records follow. Unobservable: the last records stay.
	if err := user.Client.Delete(context.Background(), readyNode("n2", "")); err != nil {
		t.Fatal(err)
	}
	controllertest.ReconcileUntil(t, r, holder, func() (bool, string) {
		ci, _ := get(t, seed.Client, holder)
		return slices.Equal(ci.Status.Targets, []string{"10.0.0.1"}), fmt.Sprintf("targets %v", ci.Status.Targets)
	})
	user.St = clusteraccess.State{Phase: clusteraccess.PhaseUnreachable, Reason: string(clusteraccess.FailureUnreachable), Message: "timed out"}
	controllertest.ReconcileUntil(t, r, holder, publishedWith(t, seed.Client, holder, v1alpha1.ReasonStaleRecordsKept))
	ci, ep = get(t, seed.Client, holder)
	if ep == nil || publishedOf(t, ci).Reason != v1alpha1.ReasonStaleRecordsKept ||
		meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionClusterReachable).Reason != v1alpha1.ReasonUnreachable {
		t.Fatalf("unobservable: %+v", ci.Status.Conditions)
	}

	// Deletion removes the records and lets the ClusterIngress go.
	if err := seed.Client.Delete(context.Background(), ci); err != nil {
		t.Fatal(err)
	}
	controllertest.ReconcileUntil(t, r, holder, func() (bool, string) {
		err := seed.Client.Get(context.Background(), holder, &v1alpha1.ClusterIngress{})
		return apierrors.IsNotFound(err), fmt.Sprintf("ClusterIngress after deletion: %v", err)
	})
	if err := seed.Client.Get(context.Background(), holder, &dnsrecords.DNSEndpoint{}); !apierrors.IsNotFound(err) {
		t.Fatalf("DNSEndpoint after deletion: %v", err)
	}
	// Freed: the newcomer takes the ID.
	controllertest.ReconcileUntil(t, r, newcomer, func() (bool, string) {
		nci, nep := get(t, seed.Client, newcomer)
		return nep != nil && nci.Status.Domain == "c1.dns.test", fmt.Sprintf("newcomer after the holder left: %+v", nci.Status)
	})
}

func TestZoneNotServedTouchesNothing(t *testing.T) {
	seed := controllertest.Seed(t)
	ns := controllertest.Namespace(t, seed.Client)
	access := clusteraccess.NewFake()
	r := withIdentity(&Reconciler{Client: controllertest.CachedClient(t, seed, identity.AddIndexes), Access: access, ServedZones: []string{"other.test"}, Clock: clocktesting.NewFakeClock(time.Now()), Board: cistatus.NewBoard(seed.Client).WriteThrough()})
	key := newCI(t, seed.Client, ns, "c", "c")
	controllertest.UserCluster(access, key, readyNode("n1", "10.0.0.1"))
	controllertest.ReconcileUntil(t, r, key, publishedWith(t, seed.Client, key, v1alpha1.ReasonZoneNotServed))
	ci, ep := get(t, seed.Client, key)
	if ep != nil || publishedOf(t, ci).Reason != v1alpha1.ReasonZoneNotServed {
		t.Fatalf("%+v %v", ci.Status.Conditions, ep)
	}
	if c := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionFalse {
		t.Fatalf("Ready: %+v", c)
	}
}

// TestOneWriterForEveryPart: the parts the controllers post (here the lifecycle, identity, shard and
// DNS controllers') are written by the status writer in one write with the Ready they add up to; a
// new cluster still being contacted gets its first status only after firstStatusGrace (or once
// it answers): the writer waits for the DNS controller's part.
func TestOneWriterForEveryPart(t *testing.T) {
	seed := controllertest.Seed(t)
	ns := controllertest.Namespace(t, seed.Client)
	access := clusteraccess.NewFake()
	clock := clocktesting.NewFakeClock(time.Now())
	board := cistatus.NewBoard(seed.Client)
	r := withIdentity(&Reconciler{Client: controllertest.CachedClient(t, seed, identity.AddIndexes), Access: access, ServedZones: []string{"dns.test"}, Clock: clock, Board: board})
	key := newCI(t, seed.Client, ns, "board", "board")
	// The grace counts from the creation the API server stamped, which is later than the clock's
	// start by however long the cache took to start.
	created, _ := get(t, seed.Client, key)
	clock.SetTime(created.CreationTimestamp.Time)
	user := controllertest.UserCluster(access, key, readyNode("n1", "10.0.0.1"))
	user.St = clusteraccess.State{Phase: clusteraccess.PhaseConnecting, Reason: string(clusteraccess.PhaseConnecting), Message: "contacting the API server"}
	post := func(owner cistatus.Owner, c metav1.Condition) {
		t.Helper()
		ci, _ := get(t, seed.Client, key)
		board.Overlay(ci)
		meta.SetStatusCondition(&ci.Status.Conditions, c)
		board.Post(context.Background(), ci, owner)
	}
	post(cistatus.Lifecycle, metav1.Condition{Type: v1alpha1.ConditionSourceAvailable, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSourcePresent, Message: "here"})

	// Connecting: no status yet, a look again when the grace ends. (Once the cache has the
	// ClusterIngress: before, a reconcile finds nothing to do.)
	controllertest.ReconcileUntil(t, r, key, func() (bool, string) {
		return r.Client.Get(context.Background(), key, &v1alpha1.ClusterIngress{}) == nil, "the cache does not hold the ClusterIngress yet"
	})
	res := controllertest.Reconcile(t, r, key, 1)
	controllertest.Reconcile(t, board, key, 1)
	if ci, _ := get(t, seed.Client, key); len(ci.Status.Conditions) != 0 || res.RequeueAfter <= 0 || res.RequeueAfter > firstStatusGrace {
		t.Fatalf("first status while connecting: %+v, requeue after %s", ci.Status.Conditions, res.RequeueAfter)
	}
	clock.Step(firstStatusGrace)
	both := func(check func() (bool, string)) func() (bool, string) {
		return func() (bool, string) {
			controllertest.Reconcile(t, board, key, 1)
			return check()
		}
	}
	controllertest.ReconcileUntil(t, r, key, both(func() (bool, string) {
		ci, _ := get(t, seed.Client, key)
		c := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionClusterReachable)
		s := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionSourceAvailable)
		return c != nil && c.Reason == v1alpha1.ReasonConnecting && s != nil && s.Message == "here", fmt.Sprintf("conditions %+v", ci.Status.Conditions)
	}))
	// The domain was decided as the cluster appeared, still being contacted, and went out in that
	// same first write.
	if ci, _ := get(t, seed.Client, key); ci.Status.Domain != "board.dns.test" || ci.Status.ClusterID != "board" ||
		!meta.IsStatusConditionTrue(ci.Status.Conditions, v1alpha1.ConditionDomainAssigned) {
		t.Fatalf("first status of a cluster still being contacted: domain %q id %q conditions %+v", ci.Status.Domain,
			ci.Status.ClusterID, ci.Status.Conditions)
	}

	// Reachable, shards not available yet: published, not Ready, in one writer's status.
	user.St = clusteraccess.State{}
	post(cistatus.Shards, metav1.Condition{Type: v1alpha1.ConditionShardsAvailable, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonShardsApplyFailed, Message: "m"})
	controllertest.ReconcileUntil(t, r, key, both(publishedWith(t, seed.Client, key, v1alpha1.ReasonPublished)))
	ci, _ := get(t, seed.Client, key)
	if c := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "ShardsAvailable") {
		t.Fatalf("Ready with shards unavailable: %+v", c)
	}
	// The shards come up: Ready in the write that says so.
	post(cistatus.Shards, metav1.Condition{Type: v1alpha1.ConditionShardsAvailable, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonShardsAvailable, Message: "1 shard(s)"})
	controllertest.Reconcile(t, board, key, 1)
	ci, _ = get(t, seed.Client, key)
	s := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionShardsAvailable)
	if c := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionReady); s == nil || s.Status != metav1.ConditionTrue || c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("shards available: conditions %+v", ci.Status.Conditions)
	}

	// Gone: the board forgets it.
	if err := seed.Client.Delete(context.Background(), ci); err != nil {
		t.Fatal(err)
	}
	controllertest.ReconcileUntil(t, r, key, func() (bool, string) { // r lets the finalizer go
		controllertest.Reconcile(t, board, key, 1)
		_, ok := board.Posted(key, v1alpha1.ConditionShardsAvailable)
		return !ok, "the board still holds the deleted cluster's conditions"
	})
}

func publishedWith(t *testing.T, c client.Client, key types.NamespacedName, reason string) func() (bool, string) {
	return func() (bool, string) {
		ci, _ := get(t, c, key)
		p := publishedOf(t, ci)
		return p != nil && p.Reason == reason, fmt.Sprintf("DNSPublished %+v, want %s", p, reason)
	}
}

func controllerHas(ci *v1alpha1.ClusterIngress, f string) bool {
	return slices.Contains(ci.Finalizers, f)
}

// A node change of a published cluster updates its records and posts the status that reports
// them in the same pass, with no second reconcile (the board's writer holds the status write while
// records wait: cistatus.TestStatusWaitsForRecords); the status says when the records were written.
func TestRecordsAndTheirStatusInOnePass(t *testing.T) {
	seed := controllertest.Seed(t)
	ns := controllertest.Namespace(t, seed.Client)
	access := clusteraccess.NewFake()
	clock := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	r := withIdentity(&Reconciler{Client: controllertest.CachedClient(t, seed, identity.AddIndexes), Access: access, ServedZones: []string{"dns.test"},
		Clock: clock, Board: cistatus.NewBoard(seed.Client).WriteThrough()})
	key := newCI(t, seed.Client, ns, "first", "first")
	user := controllertest.UserCluster(access, key, readyNode("n1", "10.0.0.1"))
	controllertest.ReconcileUntil(t, r, key, func() (bool, string) {
		ci, ep := get(t, seed.Client, key)
		return ep != nil && ci.Status.Domain == "first.dns.test", fmt.Sprintf("first write: endpoint %v, domain %q", ep != nil, ci.Status.Domain)
	})
	ci, _ := get(t, seed.Client, key)
	if !slices.Equal(ci.Status.Targets, []string{"10.0.0.1"}) || ci.Status.LastPublishedTime == nil {
		t.Fatalf("the first records' status: %+v", ci.Status)
	}

	clock.Step(time.Minute)
	written := clock.Now()
	if err := user.Client.Create(context.Background(), readyNode("n2", "10.0.0.2")); err != nil {
		t.Fatal(err)
	}
	res := controllertest.Reconcile(t, r, key, 1)
	ci, ep := get(t, seed.Client, key)
	if got := dnsrecords.Targets(ep.Spec.Endpoints); !slices.Equal(got, []string{"10.0.0.1", "10.0.0.2"}) {
		t.Fatalf("records after the node change: %v", got)
	}
	if !slices.Equal(ci.Status.Targets, []string{"10.0.0.1", "10.0.0.2"}) || ci.Status.LastPublishedTime == nil ||
		!ci.Status.LastPublishedTime.Time.Equal(written) || res.RequeueAfter != 0 {
		t.Fatalf("status after the records' pass: targets %v, lastPublishedTime %v (records written %v), result %+v",
			ci.Status.Targets, ci.Status.LastPublishedTime, written, res)
	}
	// The watch event of that update is no cause for another pass; anyone else's edit of the
	// records must be repaired at once.
	own := event.UpdateEvent{ObjectOld: ep, ObjectNew: ep}
	if r.notOwnUpdate().Update(own) {
		t.Fatalf("the controller's own update (generation %d) wakes it", ep.Generation)
	}
	edited := ep.DeepCopy()
	edited.Generation++
	if !r.notOwnUpdate().Update(event.UpdateEvent{ObjectOld: ep, ObjectNew: edited}) {
		t.Fatal("an edit after the controller's update does not wake it")
	}
	// Nor is the status write that carries the identity decision it published for; a new decision is.
	blank := ci.DeepCopy()
	blank.Status.Domain, blank.Status.ClusterID = "", ""
	meta.RemoveStatusCondition(&blank.Status.Conditions, v1alpha1.ConditionDomainAssigned)
	if r.notOwnStatus().Update(event.UpdateEvent{ObjectOld: blank, ObjectNew: ci}) {
		t.Fatal("the write of the domain it already published for wakes it")
	}
	moved := ci.DeepCopy()
	moved.Status.Domain = "elsewhere.dns.test"
	if !r.notOwnStatus().Update(event.UpdateEvent{ObjectOld: ci, ObjectNew: moved}) {
		t.Fatal("a domain it has not acted on does not wake it")
	}
}

// TestDNSEndpointsCarryTheLabelExternalDNSFilters: the chart's external-dns publishes only
// DNSEndpoints labelled shardgate.io/managed-by=shardgate. Shardgate creates its own with the
// label, and labels one an older Shardgate wrote without it even while the cluster cannot be
// observed (otherwise external-dns would delete its records), leaving the records as they are.
func TestDNSEndpointsCarryTheLabelExternalDNSFilters(t *testing.T) {
	seed := controllertest.Seed(t)
	ns := controllertest.Namespace(t, seed.Client)
	access := clusteraccess.NewFake()
	cached := controllertest.CachedClient(t, seed, identity.AddIndexes)
	r := withIdentity(&Reconciler{Client: cached, Access: access, ServedZones: []string{"dns.test"}, Clock: clocktesting.NewFakeClock(time.Now()), Board: cistatus.NewBoard(seed.Client).WriteThrough()})
	key := newCI(t, seed.Client, ns, "labelled", "lab1")
	user := controllertest.UserCluster(access, key, readyNode("n1", "10.0.0.1"))
	controllertest.ReconcileUntil(t, r, key, publishedWith(t, seed.Client, key, v1alpha1.ReasonPublished))
	_, ep := get(t, seed.Client, key)
	if ep == nil || ep.Labels[v1alpha1.ManagedByLabel] != v1alpha1.ManagedByValue {
		t.Fatalf("created DNSEndpoint: %+v", ep)
	}
	records := ep.Spec.Endpoints

	patch := client.MergeFrom(ep.DeepCopy())
	ep.Labels = nil
	if err := seed.Client.Patch(context.Background(), ep, patch); err != nil {
		t.Fatal(err)
	}
	user.St = clusteraccess.State{Phase: clusteraccess.PhaseUnreachable, Reason: string(clusteraccess.FailureUnreachable), Message: "timed out"}
	controllertest.ReconcileUntil(t, r, key, func() (bool, string) {
		_, ep = get(t, seed.Client, key)
		return ep.Labels[v1alpha1.ManagedByLabel] == v1alpha1.ManagedByValue, fmt.Sprintf("labels %v", ep.Labels)
	})
	if !dnsrecords.Equal(ep.Spec.Endpoints, records) {
		t.Fatalf("relabelling changed the records: %+v (were %+v)", ep.Spec.Endpoints, records)
	}
}
