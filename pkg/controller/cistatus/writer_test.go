package cistatus_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controllertest"
)

type writerEnv struct {
	c     client.Client
	board *cistatus.Board
	key   types.NamespacedName
}

func newWriterEnv(t *testing.T) *writerEnv {
	seed := controllertest.Seed(t)
	ns := controllertest.Namespace(t, seed.Client)
	ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c"},
		Spec: v1alpha1.ClusterIngressSpec{ClusterID: "c", DNS: v1alpha1.ResolveDNS(v1alpha1.DNSSettings{Zone: "z.test"}, ""),
			ClusterRef: v1alpha1.ClusterReference{Kind: v1alpha1.SourceKindSecret, Name: "c"}, Profile: "p",
			Shards: v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default", Publishing: v1alpha1.PublishNodePort}})}}
	if err := seed.Client.Create(context.Background(), ci); err != nil {
		t.Fatal(err)
	}
	return &writerEnv{c: seed.Client, board: cistatus.NewBoard(seed.Client), key: client.ObjectKeyFromObject(ci)}
}

// publishedWriterEnv is a writer whose cluster holds its domain and has its records' status
// written.
func publishedWriterEnv(t *testing.T) *writerEnv {
	e := newWriterEnv(t)
	e.post(t, cistatus.Identity, holdDomain)
	e.post(t, cistatus.DNS, publishDNS)
	controllertest.Reconcile(t, e.board, e.key, 1)
	return e
}

// longNames are n distinct names of 236 bytes, as O may give nodes.
func longNames(letter string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%05d", strings.Repeat(letter, 230), i)
	}
	return out
}

func (e *writerEnv) get(t *testing.T) *v1alpha1.ClusterIngress {
	t.Helper()
	ci := &v1alpha1.ClusterIngress{}
	if err := e.c.Get(context.Background(), e.key, ci); err != nil {
		t.Fatal(err)
	}
	return ci
}

// post posts owner's part as a controller does: read, overlay, edit, post.
func (e *writerEnv) post(t *testing.T, owner cistatus.Owner, edit func(*v1alpha1.ClusterIngressStatus)) {
	t.Helper()
	ci := e.get(t)
	e.board.Overlay(ci)
	edit(&ci.Status)
	e.board.Post(context.Background(), ci, owner)
}

func setCond(typ string, s metav1.ConditionStatus, reason string) func(*v1alpha1.ClusterIngressStatus) {
	return func(st *v1alpha1.ClusterIngressStatus) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: s, Reason: reason, Message: "m"})
	}
}

// TestWriterWritesEveryPartInOneApply: three controllers' parts, one write, with Ready; a cluster's
// first write waits for the DNS controller's part; posting the same again writes nothing.
func TestWriterWritesEveryPartInOneApply(t *testing.T) {
	e := newWriterEnv(t)
	e.post(t, cistatus.Lifecycle, setCond(v1alpha1.ConditionSourceAvailable, metav1.ConditionTrue, v1alpha1.ReasonSourcePresent))
	e.post(t, cistatus.Allocation, func(s *v1alpha1.ClusterIngressStatus) { s.Routes = 5 })
	controllertest.Reconcile(t, e.board, e.key, 1)
	if ci := e.get(t); len(ci.Status.Conditions) != 0 || ci.Status.Routes != 0 {
		t.Fatalf("written before the DNS controller's part: %+v", ci.Status)
	}
	e.post(t, cistatus.Identity, holdDomain)
	e.post(t, cistatus.DNS, func(s *v1alpha1.ClusterIngressStatus) {
		setCond(v1alpha1.ConditionClusterReachable, metav1.ConditionTrue, v1alpha1.ReasonReachable)(s)
		setCond(v1alpha1.ConditionDNSPublished, metav1.ConditionTrue, v1alpha1.ReasonPublished)(s)
	})
	controllertest.Reconcile(t, e.board, e.key, 1)
	ci := e.get(t)
	ready := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionReady)
	if ci.Status.Domain != "c.z.test" || ci.Status.Routes != 5 || len(ci.Status.Conditions) != 5 || ready == nil ||
		ready.Status != metav1.ConditionTrue {
		t.Fatalf("status %+v", ci.Status)
	}
	rv := ci.ResourceVersion
	e.post(t, cistatus.Allocation, func(s *v1alpha1.ClusterIngressStatus) { s.Routes = 5 })
	controllertest.Reconcile(t, e.board, e.key, 2)
	if ci := e.get(t); ci.ResourceVersion != rv {
		t.Errorf("an unchanged status was written again (resourceVersion %s -> %s)", rv, ci.ResourceVersion)
	}
	for _, f := range ci.ManagedFields {
		if f.Subresource == "status" && (f.Manager != v1alpha1.FieldOwner || f.Operation != metav1.ManagedFieldsOperationApply) {
			t.Errorf("status managed by %s (%s), want only %s by apply", f.Manager, f.Operation, v1alpha1.FieldOwner)
		}
	}
}

// TestWriterTakesOverWhatAnOlderShardgateWrote: status written by merge patch (Shardgate before
// the writer) is handed to the apply manager, so a field or condition a controller no longer
// reports (TLS turned off: no certificate) really goes.
func TestWriterTakesOverWhatAnOlderShardgateWrote(t *testing.T) {
	e := newWriterEnv(t)
	ci := e.get(t)
	before := ci.DeepCopy()
	ci.Status.Certificate = &v1alpha1.CertificateStatus{Name: "old"}
	ci.Status.Domain = "c.z.test"
	setCond(v1alpha1.ConditionCertificateReady, metav1.ConditionTrue, v1alpha1.ReasonCertificateIssued)(&ci.Status)
	if err := e.c.Status().Patch(context.Background(), ci, client.MergeFrom(before), client.FieldOwner(v1alpha1.FieldOwner)); err != nil {
		t.Fatal(err)
	}
	e.post(t, cistatus.Certificates, func(s *v1alpha1.ClusterIngressStatus) {
		s.Certificate = nil
		meta.RemoveStatusCondition(&s.Conditions, v1alpha1.ConditionCertificateReady)
	})
	e.post(t, cistatus.DNS, setCond(v1alpha1.ConditionClusterReachable, metav1.ConditionTrue, v1alpha1.ReasonReachable))
	controllertest.Reconcile(t, e.board, e.key, 1)
	ci = e.get(t)
	if ci.Status.Certificate != nil || meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionCertificateReady) != nil {
		t.Fatalf("what the older writer wrote stayed: %+v", ci.Status)
	}
	if ci.Status.Domain != "c.z.test" {
		t.Errorf("a field of an owner that has not posted (the identity's domain) was lost: %+v", ci.Status)
	}
	onlyApplyManagesStatus(t, ci)
}

// onlyApplyManagesStatus fails t when a manager other than by apply owns ci's status.
func onlyApplyManagesStatus(t *testing.T, ci *v1alpha1.ClusterIngress) {
	t.Helper()
	for _, f := range ci.ManagedFields {
		if f.Subresource == "status" && f.Operation != metav1.ManagedFieldsOperationApply {
			t.Errorf("status still managed by %s (%s)", f.Manager, f.Operation)
		}
	}
}

// TestOverlayGivesTheLatestPost: a controller reading a stale object still decides on its own
// latest post (and the others'), not on what the cache last saw.
func TestOverlayGivesTheLatestPost(t *testing.T) {
	e := newWriterEnv(t)
	stale := e.get(t)
	e.post(t, cistatus.RoutedIPs, func(s *v1alpha1.ClusterIngressStatus) {
		s.RoutedIPs = []v1alpha1.RoutedIPRecord{{Address: "192.0.2.7"}}
	})
	e.board.Overlay(stale)
	if len(stale.Status.RoutedIPs) != 1 || stale.Status.RoutedIPs[0].Address != "192.0.2.7" {
		t.Fatalf("overlay: %+v", stale.Status.RoutedIPs)
	}
	// Write stores it at once, DNS part or not (a record a Job rests on).
	ci := e.get(t)
	e.board.Overlay(ci)
	if err := e.board.Write(context.Background(), ci, cistatus.RoutedIPs); err != nil {
		t.Fatal(err)
	}
	if got := e.get(t).Status.RoutedIPs; len(got) != 1 {
		t.Fatalf("written: %+v", got)
	}
}

// TestWriterForgetsADeletedCluster: its parts go with it.
func TestWriterForgetsADeletedCluster(t *testing.T) {
	e := newWriterEnv(t)
	e.post(t, cistatus.Shards, setCond(v1alpha1.ConditionShardsAvailable, metav1.ConditionTrue, v1alpha1.ReasonShardsAvailable))
	if err := e.c.Delete(context.Background(), e.get(t)); err != nil {
		t.Fatal(err)
	}
	controllertest.Reconcile(t, e.board, e.key, 1)
	if _, ok := e.board.Posted(e.key, v1alpha1.ConditionShardsAvailable); ok {
		t.Error("the deleted cluster's parts are still held")
	}
}

// A reconcile whose context ended (its replica's fence lapsed) posts nothing: what it decided
// may be older than what another replica wrote meanwhile.
func TestPostFromAnEndedReconcileIsDropped(t *testing.T) {
	e := newWriterEnv(t)
	ci := e.get(t)
	setCond(v1alpha1.ConditionShardsAvailable, metav1.ConditionTrue, v1alpha1.ReasonShardsAvailable)(&ci.Status)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e.board.Post(ctx, ci, cistatus.Shards)
	if _, ok := e.board.Posted(e.key, v1alpha1.ConditionShardsAvailable); ok {
		t.Error("a post from an ended reconcile was kept")
	}
}
