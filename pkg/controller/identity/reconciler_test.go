package identity

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/dnsrecords"
	"github.com/shardgate/shardgate/test/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

const zone = "id.test"

// env is a seed namespace with the identity controller over a cached client, as in the manager;
// no user cluster is registered anywhere: the identity never needs one.
type env struct {
	t   *testing.T
	c   client.Client // the API server, uncached
	ns  string
	r   *Reconciler
	ctx context.Context
}

func newEnv(t *testing.T) *env {
	seed := controllertest.Seed(t)
	cached := controllertest.CachedClient(t, seed, AddIndexes)
	return &env{t: t, c: seed.Client, ns: controllertest.Namespace(t, seed.Client), ctx: context.Background(),
		r: &Reconciler{Client: cached, ServedZones: []string{zone},
			Board: cistatus.NewBoard(seed.Client).WriteThrough()}}
}

// restart is the controller started again (after a rollback and forward): a new board.
func (e *env) restart() {
	e.r = &Reconciler{Client: e.r.Client, ServedZones: e.r.ServedZones, Board: cistatus.NewBoard(e.c).WriteThrough()}
}

// cluster creates ClusterIngress name asking for id.
func (e *env) cluster(name, id string) types.NamespacedName {
	e.t.Helper()
	ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
		Spec: v1alpha1.ClusterIngressSpec{
			ClusterID: id, DNS: v1alpha1.ResolveDNS(v1alpha1.DNSSettings{Zone: zone}, ""), Profile: "p",
			ClusterRef: v1alpha1.ClusterReference{Kind: v1alpha1.SourceKindSecret, Name: name},
			Shards: v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default",
				Publishing: v1alpha1.PublishNodePort}})}}
	if err := e.c.Create(e.ctx, ci); err != nil {
		e.t.Fatal(err)
	}
	return client.ObjectKeyFromObject(ci)
}

func (e *env) get(key types.NamespacedName) *v1alpha1.ClusterIngress {
	e.t.Helper()
	ci := &v1alpha1.ClusterIngress{}
	if err := e.c.Get(e.ctx, key, ci); err != nil {
		e.t.Fatal(err)
	}
	return ci
}

// askFor changes key's cluster ID (S editing its annotation; the lifecycle controller's write).
func (e *env) askFor(key types.NamespacedName, id string) {
	e.t.Helper()
	ci := e.get(key)
	patch := client.MergeFrom(ci.DeepCopy())
	ci.Spec.ClusterID = id
	if err := e.c.Patch(e.ctx, ci, patch); err != nil {
		e.t.Fatal(err)
	}
}

// endpoint creates a DNSEndpoint named name with records for names, controlled by owner if any:
// what S (with a grant to write DNSEndpoints) or another tool can make in a seed namespace.
func (e *env) endpoint(name string, labels map[string]string, owner *v1alpha1.ClusterIngress,
	names ...string) *dnsrecords.DNSEndpoint {
	e.t.Helper()
	ep := &dnsrecords.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name, Labels: labels}}
	for _, n := range names {
		ep.Spec.Endpoints = append(ep.Spec.Endpoints, dnsrecords.Endpoint{DNSName: n, RecordType: "A",
			RecordTTL: 60, Targets: []string{"192.0.2.1"}})
	}
	if owner != nil {
		if err := controllerutil.SetControllerReference(owner, ep, e.c.Scheme()); err != nil {
			e.t.Fatal(err)
		}
	}
	if err := e.c.Create(e.ctx, ep); err != nil {
		e.t.Fatal(err)
	}
	return ep
}

func records(id string) []string { return []string{"*." + id + "." + zone, id + "." + zone} }

// publishes records in key's status that its records are at shard domains (the DNS controller's
// write after it published them, or an older release's; none: no records any more).
func (e *env) publishes(key types.NamespacedName, domains ...string) {
	e.t.Helper()
	ci := e.get(key)
	patch := client.MergeFrom(ci.DeepCopy())
	ci.Status.Shards = nil
	for i, d := range domains {
		ci.Status.Shards = append(ci.Status.Shards, v1alpha1.ShardStatus{Name: fmt.Sprintf("s%d", i), Domain: d,
			Targets: []string{"192.0.2.1"}})
	}
	if err := e.c.Status().Patch(e.ctx, ci, patch, client.FieldOwner("dns-test")); err != nil {
		e.t.Fatal(err)
	}
}

// until reconciles every key in turn (as the watches do on each change) until key has domain and
// DomainAssigned has reason, whose message has says.
func (e *env) until(key types.NamespacedName, domain, reason, says string, keys ...types.NamespacedName) {
	e.t.Helper()
	controllertest.ReconcileUntil(e.t, e.r, key, func() (bool, string) {
		for _, k := range keys {
			controllertest.Reconcile(e.t, e.r, k, 1)
		}
		ci := e.get(key)
		c := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionDomainAssigned)
		ok := ci.Status.Domain == domain && c != nil && c.Reason == reason && strings.Contains(c.Message, says) &&
			c.ObservedGeneration == ci.Generation
		return ok, fmt.Sprintf("domain %q DomainAssigned %+v; want %q %s saying %q", ci.Status.Domain, c, domain,
			reason, says)
	})
}

// cached waits until the controller's cache shows key as ok says: a write of another release must
// be seen before a decision is expected from it (a decision from the older view overwrites it).
func (e *env) cached(key types.NamespacedName, ok func(*v1alpha1.ClusterIngress) bool) {
	e.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		ci := &v1alpha1.ClusterIngress{}
		if err := e.r.Client.Get(e.ctx, key, ci); err == nil && ok(ci) {
			return
		}
	}
	e.t.Fatalf("the cache never showed %s as expected", key)
}

func domain(id string) string { return id + "." + zone }

// TestFreeDomainIsHeldBeforeTheClusterIsReachable: no user cluster is engaged (nothing in this
// test can reach one), and the domain is held at once, with its ID.
func TestFreeDomainIsHeldBeforeTheClusterIsReachable(t *testing.T) {
	e := newEnv(t)
	k := e.cluster("fresh", "fresh")
	e.until(k, domain("fresh"), v1alpha1.ReasonDomainHeld, domain("fresh"))
	if ci := e.get(k); ci.Status.ClusterID != "fresh" {
		t.Fatalf("status.clusterID %q", ci.Status.ClusterID)
	}
	// The refusals are the DNS controller's reasons, said here too, and take nothing.
	bad := e.cluster("bad", "Not_A_Label")
	e.until(bad, "", v1alpha1.ReasonInvalidClusterID, "RFC 1123")
	long := e.cluster("long", strings.Repeat("l", 58))
	e.until(long, "", v1alpha1.ReasonNamesTooLong, "at most 57")
}

// TestStatusHolderIsNeverDisplaced: neither an older cluster asking for its ID, nor another
// cluster's DNSEndpoint publishing names under it, takes a held domain.
func TestStatusHolderIsNeverDisplaced(t *testing.T) {
	e := newEnv(t)
	older := e.cluster("a-older", "elsewhere") // created first, and first by name on a tie
	time.Sleep(1100 * time.Millisecond)        // creation times have whole seconds
	holder := e.cluster("b-holder", "held")
	e.until(holder, domain("held"), v1alpha1.ReasonDomainHeld, "")
	e.until(older, domain("elsewhere"), v1alpha1.ReasonDomainHeld, "")

	e.askFor(older, "held")
	e.until(older, domain("elsewhere"), v1alpha1.ReasonClusterIDConflict, "held by the cluster "+holder.String(), holder)
	e.until(holder, domain("held"), v1alpha1.ReasonDomainHeld, "")

	// Another cluster whose records are under the held domain (a shard named like it in a nested
	// zone, or records an older release left): the holder keeps it.
	publisher := e.cluster("c-publisher", "pub")
	e.until(publisher, domain("pub"), v1alpha1.ReasonDomainHeld, "")
	e.publishes(publisher, "x.held."+zone, domain("pub"))
	e.until(holder, domain("held"), v1alpha1.ReasonDomainHeld, "", older, publisher)
	e.until(older, domain("elsewhere"), v1alpha1.ReasonClusterIDConflict, "held by the cluster "+holder.String())

	// Being deleted, it still holds until it is gone (its records go first).
	h := e.get(holder)
	controllerutil.AddFinalizer(h, "test.shardgate.io/hold")
	if err := e.c.Update(e.ctx, h); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Delete(e.ctx, h); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	e.until(older, domain("elsewhere"), v1alpha1.ReasonClusterIDConflict, holder.String(), holder)
	h = e.get(holder)
	controllerutil.RemoveFinalizer(h, "test.shardgate.io/hold")
	if err := e.c.Update(e.ctx, h); err != nil {
		t.Fatal(err)
	}
	// Gone: the publisher's names under it (x.held) now block it, until they go too.
	e.until(older, domain("elsewhere"), v1alpha1.ReasonClusterIDConflict,
		"DNSEndpoint of the cluster "+publisher.String())
	e.publishes(publisher, domain("pub"))
	e.until(older, domain("held"), v1alpha1.ReasonDomainHeld, "")
}

// TestDNSEndpointsBlockNothing: what a cluster publishes is read from its status, which only
// Shardgate writes; no DNSEndpoint blocks a domain, not even one posing as a cluster's own
// (Shardgate's label and a controller reference to the ClusterIngress of its name), which S can
// write in its namespace with a grant.
func TestDNSEndpointsBlockNothing(t *testing.T) {
	e := newEnv(t)
	x, y := e.cluster("x", "x-id"), e.cluster("y", "y-id")
	labels := func(name string) map[string]string { return dnsrecords.EndpointLabels(e.ns, name, 1) }
	e.endpoint("x", labels("x"), e.get(x), records("wanted")...) // posing as x's own
	e.endpoint("y", nil, e.get(y), records("wanted")...)         // no label
	e.endpoint("w", map[string]string{v1alpha1.ManagedByLabel: "someone-else"}, nil, records("wanted")...)

	asker := e.cluster("asker", "wanted")
	e.until(asker, domain("wanted"), v1alpha1.ReasonDomainHeld, "", x, y)
}

// TestIDChangeKeepsTheOldIDBlockedWhileItsRecordsAreOut: a cluster whose ID changes holds the new
// domain at once; its old one stays blocked for others while its records are still under it by its
// status (an unreachable cluster's records are never wiped), and is free once the records follow
// the new ID.
func TestIDChangeKeepsTheOldIDBlockedWhileItsRecordsAreOut(t *testing.T) {
	e := newEnv(t)
	mover := e.cluster("mover", "first")
	e.until(mover, domain("first"), v1alpha1.ReasonDomainHeld, "")
	e.publishes(mover, domain("first"))

	e.askFor(mover, "second")
	e.until(mover, domain("second"), v1alpha1.ReasonDomainHeld, "")
	if ci := e.get(mover); ci.Status.ClusterID != "second" {
		t.Fatalf("status.clusterID %q after the move", ci.Status.ClusterID)
	}
	taker := e.cluster("taker", "first")
	e.until(taker, "", v1alpha1.ReasonClusterIDConflict, "DNSEndpoint of the cluster "+mover.String()+" still publishes")

	// Back to the ID whose records it still publishes: it gets it back, the newcomer stays out.
	e.askFor(mover, "first")
	e.until(mover, domain("first"), v1alpha1.ReasonDomainHeld, "")
	e.until(taker, "", v1alpha1.ReasonClusterIDConflict, mover.String())

	// Away again; the DNS controller reaches the cluster and rewrites its records: freed.
	e.askFor(mover, "second")
	e.until(mover, domain("second"), v1alpha1.ReasonDomainHeld, "")
	e.until(taker, "", v1alpha1.ReasonClusterIDConflict, "still publishes")
	e.publishes(mover, domain("second"))
	e.until(taker, domain("first"), v1alpha1.ReasonDomainHeld, "", mover)
	e.until(mover, domain("second"), v1alpha1.ReasonDomainHeld, "")
}

// TestSwapConflictsUntilAThirdID: A (a) and B (b) asking for each other's ID both stay where they
// are, told to move one through a third ID; doing so completes the swap.
func TestSwapConflictsUntilAThirdID(t *testing.T) {
	e := newEnv(t)
	a, b := e.cluster("a", "swap-a"), e.cluster("b", "swap-b")
	e.until(a, domain("swap-a"), v1alpha1.ReasonDomainHeld, "")
	e.until(b, domain("swap-b"), v1alpha1.ReasonDomainHeld, "")

	e.askFor(a, "swap-b")
	e.askFor(b, "swap-a")
	e.until(a, domain("swap-a"), v1alpha1.ReasonClusterIDConflict, "third", b)
	e.until(b, domain("swap-b"), v1alpha1.ReasonClusterIDConflict, "third", a)

	e.askFor(a, "swap-c")
	e.until(a, domain("swap-c"), v1alpha1.ReasonDomainHeld, "")
	e.until(b, domain("swap-a"), v1alpha1.ReasonDomainHeld, "", a)
	e.askFor(a, "swap-b")
	e.until(a, domain("swap-b"), v1alpha1.ReasonDomainHeld, "", b)
}

// TestRollbackNeverLeavesTwoHolders: a rollback to the previous release (which decides holders by
// status and age alone, rewrites records and writes status by merge patch under its own field
// manager) and forward again never leaves two clusters holding one domain, nor one holding a
// domain another cluster's records are under unless it held it first.
func TestRollbackNeverLeavesTwoHolders(t *testing.T) {
	e := newEnv(t)
	mover, waiter := e.cluster("mover", "rb-a"), e.cluster("waiter", "rb-w")
	e.until(mover, domain("rb-a"), v1alpha1.ReasonDomainHeld, "")
	e.publishes(mover, domain("rb-a"))
	e.askFor(mover, "rb-b") // unreachable: its records stay rb-a's
	e.until(mover, domain("rb-b"), v1alpha1.ReasonDomainHeld, "")
	e.until(waiter, domain("rb-w"), v1alpha1.ReasonDomainHeld, "")
	e.askFor(waiter, "rb-a")
	e.until(waiter, domain("rb-w"), v1alpha1.ReasonClusterIDConflict, "still publishes")

	// Rolled back: the previous release reaches the mover and rewrites its records to rb-b, and
	// their record in status (nothing else of this release is touched); rb-a is free by its rule
	// and by this one, and it gives it to the waiter, writing status by merge patch.
	e.publishes(mover, domain("rb-b"))
	legacy := func(key types.NamespacedName, id string) {
		ci := e.get(key)
		patch := client.MergeFrom(ci.DeepCopy())
		ci.Status.ClusterID, ci.Status.Domain = id, domain(id)
		if err := e.c.Status().Patch(e.ctx, ci, patch, client.FieldOwner("seed-controller")); err != nil {
			t.Fatal(err)
		}
	}
	legacy(waiter, "rb-a")
	// ... and a hand edit (or a race of the previous release's replicas) gives the mover's domain
	// to a third cluster too: two status holders, which must never last.
	time.Sleep(1100 * time.Millisecond) // younger than the others by its creation time, not by its name
	third := e.cluster("third", "rb-c")
	legacy(third, "rb-b")

	// Forward again: a new process, whose board knows nothing of the posts before the rollback.
	e.restart()
	all := []types.NamespacedName{mover, waiter, third}
	e.until(waiter, domain("rb-a"), v1alpha1.ReasonDomainHeld, "", all...)
	e.until(mover, domain("rb-b"), v1alpha1.ReasonDomainHeld, "", all...)
	e.until(third, domain("rb-c"), v1alpha1.ReasonDomainHeld, "", all...)
	held := map[string]string{}
	for _, k := range all {
		ci := e.get(k)
		if other, dup := held[ci.Status.Domain]; dup {
			t.Fatalf("%s and %s both hold %s", other, k, ci.Status.Domain)
		}
		held[ci.Status.Domain] = k.String()
		for _, f := range ci.ManagedFields {
			// dns-test stands in for the DNS controller, whose part the board applies in Shardgate.
			if f.Subresource == "status" && f.Operation != metav1.ManagedFieldsOperationApply && f.Manager != "dns-test" {
				t.Errorf("%s: status still managed by %s (%s) after the identity's write", k, f.Manager, f.Operation)
			}
		}
	}

	// Two status holders of the domain asked for, both publishing it: the older keeps it, whatever
	// order they run in, and the younger yields (its DNS controller removes its copies).
	e.publishes(waiter, domain("rb-a"))
	legacy(third, "rb-a")
	e.publishes(third, domain("rb-a"))
	e.askFor(third, "rb-a")
	e.cached(third, func(ci *v1alpha1.ClusterIngress) bool {
		return ci.Status.Domain == domain("rb-a") && ci.Spec.ClusterID == "rb-a" && len(ci.Status.Shards) == 1
	})
	e.restart()
	e.until(third, "", v1alpha1.ReasonDomainYielded, waiter.String(), all...)
	e.until(waiter, domain("rb-a"), v1alpha1.ReasonDomainHeld, "", all...)
	if err := e.c.Delete(e.ctx, e.get(waiter)); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	e.until(third, domain("rb-a"), v1alpha1.ReasonDomainHeld, "", mover)
}
