package cistatus_test

// What the attacker's review of the one status path found (each failed before its fix): a cache
// that lags, a hand-over, a lapse, a part the API server refuses, a rollback.

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controllertest"
)

// lagging is the manager's cached client as seen during watch lag: Get answers the snapshot
// held in stale (when set) instead of what the API server has. Writes go through.
type lagging struct {
	client.Client
	mu    sync.Mutex
	stale *v1alpha1.ClusterIngress
}

func (l *lagging) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	l.mu.Lock()
	s := l.stale
	l.mu.Unlock()
	if ci, ok := obj.(*v1alpha1.ClusterIngress); ok && s != nil && client.ObjectKeyFromObject(s) == key {
		s.DeepCopyInto(ci)
		return nil
	}
	return l.Client.Get(ctx, key, obj, opts...)
}

func (l *lagging) freeze(ci *v1alpha1.ClusterIngress) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stale = ci.DeepCopy()
}

func record(addr string) []v1alpha1.RoutedIPRecord {
	return []v1alpha1.RoutedIPRecord{{Address: addr, ClassName: "cls", RoutedIP: "ns/r", Node: "n1",
		Reason: v1alpha1.ReasonRoutedIPsAssigned, Message: "held"}}
}

// writeRouted is the routed-IP controller's path: read (cache), Overlay, edit, Write.
func writeRouted(t *testing.T, c client.Client, b *cistatus.Board, e *writerEnv, addr string) {
	t.Helper()
	ci := &v1alpha1.ClusterIngress{}
	if err := c.Get(context.Background(), e.key, ci); err != nil {
		t.Fatal(err)
	}
	b.Overlay(ci)
	ci.Status.RoutedIPs = record(addr)
	if err := b.Write(context.Background(), ci, cistatus.RoutedIPs); err != nil {
		t.Fatal(err)
	}
}

// holdDomain is the identity controller's part of a cluster that holds c.z.test.
func holdDomain(s *v1alpha1.ClusterIngressStatus) {
	s.ClusterID, s.Domain = "c", "c.z.test"
	setCond(v1alpha1.ConditionDomainAssigned, metav1.ConditionTrue, v1alpha1.ReasonDomainHeld)(s)
}

// publishDNS is the DNS controller's part of a cluster published for its domain (with the identity's:
// the same object is posted for both).
func publishDNS(s *v1alpha1.ClusterIngressStatus) {
	holdDomain(s)
	setCond(v1alpha1.ConditionClusterReachable, metav1.ConditionTrue, v1alpha1.ReasonReachable)(s)
	setCond(v1alpha1.ConditionDNSPublished, metav1.ConditionTrue, v1alpha1.ReasonPublished)(s)
}

// While the cache lags the board's own last write, a part that changes back (A -> B -> A) is
// still written: the board composes over its last write, not over the stale cache.
func TestWriterComposesOverItsOwnWriteWhileTheCacheLags(t *testing.T) {
	e := newWriterEnv(t)
	lag := &lagging{Client: e.c}
	b := cistatus.NewBoard(lag)
	b.Reader = e.c
	ci := e.get(t)
	b.Overlay(ci)
	publishDNS(&ci.Status)
	b.Post(context.Background(), ci, cistatus.Identity)
	b.Post(context.Background(), ci, cistatus.DNS)
	writeRouted(t, lag, b, e, "192.0.2.1") // stored: A
	lag.freeze(e.get(t))                   // the cache has A, and lags from here on
	writeRouted(t, lag, b, e, "192.0.2.2") // stored: B (cache still A)
	writeRouted(t, lag, b, e, "192.0.2.1") // back to A: Write returns nil ...
	if got := e.get(t).Status.RoutedIPs; len(got) != 1 || got[0].Address != "192.0.2.1" {
		t.Fatalf("Write returned nil but the API server holds %+v, want 192.0.2.1 (the Job now rests on a record that was never stored)", got)
	}
}

// A replica that takes a cluster over while its cache still shows the status from before the old
// owner's last write starts its first write from the API server's status (Reader), so the parts
// it has not posted yet keep the old owner's newest records.
func TestHandOverKeepsTheOldOwnersLastRecords(t *testing.T) {
	e := newWriterEnv(t)
	a := cistatus.NewBoard(e.c) // replica A
	ci := e.get(t)
	a.Overlay(ci)
	publishDNS(&ci.Status)
	a.Post(context.Background(), ci, cistatus.Identity)
	a.Post(context.Background(), ci, cistatus.DNS)
	writeRouted(t, e.c, a, e, "192.0.2.1")
	seenByB := e.get(t)                    // B's cache stops here
	writeRouted(t, e.c, a, e, "192.0.2.2") // A's last write before the hand-over
	a.Forget(e.key)                        // A releases

	lag := &lagging{Client: e.c}
	lag.freeze(seenByB)
	b := cistatus.NewBoard(lag) // replica B, new owner
	b.Reader = e.c              // the manager's API reader
	firstPostAndWrite(t, &writerEnv{c: lag, board: b, key: e.key})
	wantRouted(t, e, "192.0.2.2", "B's first status write reverted A's routed-IP record")
}

// firstPostAndWrite: a new owner's lifecycle controller posts first, and the writer runs.
func firstPostAndWrite(t *testing.T, e *writerEnv) {
	t.Helper()
	e.post(t, cistatus.Lifecycle, setCond(v1alpha1.ConditionSourceAvailable, metav1.ConditionTrue, v1alpha1.ReasonSourcePresent))
	controllertest.Reconcile(t, e.board, e.key, 1)
}

func wantRouted(t *testing.T, e *writerEnv, addr, what string) {
	t.Helper()
	if got := e.get(t).Status.RoutedIPs; len(got) != 1 || got[0].Address != addr {
		t.Fatalf("%s: %+v, want %s", what, got, addr)
	}
}

// A replica whose Lease lapsed while another served the cluster forgets its parts when it takes
// the fence again (the replica gate's OnAcquire, TestLapsedReplicaIsToldWhenItTakesAClusterBack),
// so the other replica's newer record stays.
func TestRetakenClusterKeepsWhatAnotherReplicaWrote(t *testing.T) {
	e := newWriterEnv(t)
	a := cistatus.NewBoard(e.c)
	ci := e.get(t)
	a.Overlay(ci)
	publishDNS(&ci.Status)
	a.Post(context.Background(), ci, cistatus.Identity)
	a.Post(context.Background(), ci, cistatus.DNS)
	writeRouted(t, e.c, a, e, "192.0.2.1")
	// A lapses (no Forget); B serves the cluster and moves the address.
	b := cistatus.NewBoard(e.c)
	writeRouted(t, e.c, b, e, "192.0.2.9")
	b.Forget(e.key) // B gives it back
	// A serves it again: told on taking the fence, then its lifecycle controller posts first.
	a.Forget(e.key)
	firstPostAndWrite(t, &writerEnv{c: e.c, board: a, key: e.key})
	wantRouted(t, e, "192.0.2.9", "A's stale board reverted the record B wrote")
}

// One controller's part with a message past the API's bound (a list joined from tenants'
// objects) is cut, and never keeps another owner's part (here the routed-IP record a Job rests
// on) from being stored.
func TestLongMessageNeverBlocksTheOtherParts(t *testing.T) {
	e := newWriterEnv(t)
	ci := e.get(t)
	e.board.Overlay(ci)
	publishDNS(&ci.Status)
	e.board.Post(context.Background(), ci, cistatus.Identity)
	e.board.Post(context.Background(), ci, cistatus.DNS)
	e.post(t, cistatus.Canary, func(s *v1alpha1.ClusterIngressStatus) {
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: v1alpha1.ConditionRoutesServing,
			Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonCanaryPending,
			Message: "shards whose canary fails: " + strings.Repeat("claim-0123456789abcdef, ", 1400)})
	})
	ci = e.get(t)
	e.board.Overlay(ci)
	ci.Status.RoutedIPs = record("192.0.2.1")
	if err := e.board.Write(context.Background(), ci, cistatus.RoutedIPs); err != nil {
		t.Fatalf("the routed-IP record was refused because of the canary's part: %v", err)
	}
}

// Rollback: the old version's merge patch (same field manager name, optimistic lock) still
// removes a field and adds one; roll forward again: a fresh board hands the Update entry back to
// the apply manager and what no owner reports goes.
func TestRollbackAndRollForward(t *testing.T) {
	e := newWriterEnv(t)
	ci := e.get(t)
	e.board.Overlay(ci)
	publishDNS(&ci.Status)
	ci.Status.Certificate = &v1alpha1.CertificateStatus{Name: "new"}
	e.board.Post(context.Background(), ci, cistatus.Identity)
	e.board.Post(context.Background(), ci, cistatus.DNS)
	e.post(t, cistatus.Certificates, func(s *v1alpha1.ClusterIngressStatus) { s.Certificate = &v1alpha1.CertificateStatus{Name: "new"} })
	controllertest.Reconcile(t, e.board, e.key, 1)
	// Rollback: the old version patches status (merge, optimistic lock, manager shardgate).
	ci = e.get(t)
	before := ci.DeepCopy()
	ci.Status.Certificate = nil
	ci.Status.Routes = 3
	if err := e.c.Status().Patch(context.Background(), ci, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}),
		client.FieldOwner(v1alpha1.FieldOwner)); err != nil {
		t.Fatalf("old version's patch: %v", err)
	}
	if got := e.get(t); got.Status.Certificate != nil || got.Status.Routes != 3 {
		t.Fatalf("old version's patch did not take: %+v", got.Status)
	}
	// Roll forward: empty board; the allocation controller reports no routes.
	b := cistatus.NewBoard(e.c)
	e2 := &writerEnv{c: e.c, board: b, key: e.key}
	e2.post(t, cistatus.Allocation, func(s *v1alpha1.ClusterIngressStatus) { s.Routes = 0 })
	controllertest.Reconcile(t, b, e.key, 1)
	got := e.get(t)
	if got.Status.Routes != 0 || got.Status.Domain != "c.z.test" || got.Status.Certificate != nil {
		t.Fatalf("after roll forward: %+v", got.Status)
	}
	onlyApplyManagesStatus(t, got)
}

// Ready's lastTransitionTime stays put while the cache lags a Ready transition (the board's own
// last write is the newer status).
func TestReadyTransitionTimeWhileTheCacheLags(t *testing.T) {
	e := newWriterEnv(t)
	lag := &lagging{Client: e.c}
	b := cistatus.NewBoard(lag)
	b.Reader = e.c
	ew := &writerEnv{c: lag, board: b, key: e.key}
	ew.post(t, cistatus.Identity, holdDomain)
	ew.post(t, cistatus.DNS, publishDNS)
	controllertest.Reconcile(t, b, e.key, 1)
	lag.freeze(e.get(t)) // cache: Ready True
	ew.post(t, cistatus.DNS, setCond(v1alpha1.ConditionDNSPublished, metav1.ConditionFalse, v1alpha1.ReasonPropagating))
	controllertest.Reconcile(t, b, e.key, 1)
	first := meta.FindStatusCondition(e.get(t).Status.Conditions, v1alpha1.ConditionReady).LastTransitionTime
	time.Sleep(1100 * time.Millisecond)
	ew.post(t, cistatus.Allocation, func(s *v1alpha1.ClusterIngressStatus) { s.Routes = 2 })
	controllertest.Reconcile(t, b, e.key, 1)
	if got := meta.FindStatusCondition(e.get(t).Status.Conditions, v1alpha1.ConditionReady).LastTransitionTime; !got.Equal(&first) {
		t.Fatalf("Ready stayed False but its lastTransitionTime moved %v -> %v", first, got)
	}
}

// A part the API server refuses (here a condition reason its schema rejects, a bug in one
// controller) is left out and the other parts are written; it is tried again when its owner
// posts another.
func TestRefusedPartIsLeftOutAndTheOthersWritten(t *testing.T) {
	e := newWriterEnv(t)
	e.post(t, cistatus.Identity, holdDomain)
	e.post(t, cistatus.DNS, publishDNS)
	e.post(t, cistatus.Canary, func(s *v1alpha1.ClusterIngressStatus) {
		s.Canaries = []v1alpha1.CanaryStatus{{Shard: "default", Host: "canary.c.z.test", Conditions: []metav1.Condition{{
			Type: v1alpha1.ConditionRoutesServing, Status: metav1.ConditionFalse, Reason: "not a reason!", Message: "m",
			LastTransitionTime: metav1.Now()}}}}
	})
	ci := e.get(t)
	e.board.Overlay(ci)
	ci.Status.RoutedIPs = record("192.0.2.1")
	if err := e.board.Write(context.Background(), ci, cistatus.RoutedIPs); err != nil {
		t.Fatalf("the routed-IP record was not written beside a refused part: %v", err)
	}
	got := e.get(t)
	if len(got.Status.RoutedIPs) != 1 || got.Status.Domain != "c.z.test" || len(got.Status.Canaries) != 0 {
		t.Fatalf("status %+v", got.Status)
	}
	e.post(t, cistatus.Canary, func(s *v1alpha1.ClusterIngressStatus) { s.Canaries[0].Conditions[0].Reason = "Fixed" })
	controllertest.Reconcile(t, e.board, e.key, 1)
	if got := e.get(t); len(got.Status.Canaries) != 1 {
		t.Fatalf("the owner's next part was not written: %+v", got.Status.Canaries)
	}
}
