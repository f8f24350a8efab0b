package claims

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/test/framework"
)

// claimWorld is a seed holding cluster ns/c1 (claims allowed, domain c1.z.test) and its user
// cluster holding team-a/shop, a claim of the Ingress team-a/web, which exists.
type claimWorld struct {
	seed   client.Client
	user   *clusteraccess.FakeCluster
	access *clusteraccess.Fake
	events *events.FakeRecorder
	r      *Reconciler
	key    client.ObjectKey
}

func newClaimWorld(t *testing.T, edit func(ci *v1alpha1.ClusterIngress), userObjs ...client.Object) *claimWorld {
	t.Helper()
	ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c1"}, Spec: v1alpha1.ClusterIngressSpec{
		Shards: []v1alpha1.ShardSpec{{Name: v1alpha1.DefaultShardName}}, Claims: v1alpha1.ClaimSettings{Allowed: true}}}
	ci.Status.Domain = "c1.z.test"
	if edit != nil {
		edit(ci)
	}
	seed := fake.NewClientBuilder().WithScheme(framework.Scheme()).WithObjects(ci).
		WithStatusSubresource(&v1alpha1.ClusterIngress{}).Build()
	objs := append([]client.Object{
		&v1alpha1.IngressClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "shop", Generation: 1,
			CreationTimestamp: metav1.Now()}, Spec: v1alpha1.IngressClaimSpec{
			Ingresses: []corev1.LocalObjectReference{{Name: "web"}}, Replicas: 2}},
		&networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web"}},
	}, userObjs...)
	w := &claimWorld{seed: seed, access: clusteraccess.NewFake(), events: events.NewFakeRecorder(100),
		key: client.ObjectKeyFromObject(ci)}
	w.user = &clusteraccess.FakeCluster{Client: fake.NewClientBuilder().WithScheme(clusteraccess.UserClusterScheme()).
		WithObjects(objs...).WithStatusSubresource(&v1alpha1.IngressClaim{}).Build()}
	w.user.Caps.CRDs = true
	w.access.Add(w.key, w.user)
	w.r = &Reconciler{Client: seed, Access: w.access, Recorder: w.events, ReclaimGrace: time.Minute,
		Board: cistatus.NewBoard(seed).WriteThrough()}
	return w
}

func (w *claimWorld) reconcile(t *testing.T) ctrl.Result {
	t.Helper()
	res, err := w.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: w.key})
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	return res
}

func (w *claimWorld) cluster(t *testing.T) *v1alpha1.ClusterIngress {
	t.Helper()
	ci := &v1alpha1.ClusterIngress{}
	must(t, w.seed.Get(context.Background(), w.key, ci))
	return ci
}

func (w *claimWorld) claim(t *testing.T) *v1alpha1.IngressClaim {
	t.Helper()
	c := &v1alpha1.IngressClaim{}
	must(t, w.user.Client.Get(context.Background(), client.ObjectKey{Namespace: "team-a", Name: "shop"}, c))
	return c
}

// drained are the events recorded since the last call.
func (w *claimWorld) drained() []string {
	var out []string
	for {
		select {
		case e := <-w.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// TestNothingIsDecidedWhileTheClusterCannotBeObserved: a claim is never admitted, refused or
// reclaimed on what a cluster that cannot be read says, nor before the cluster has a domain:
// status.claims keeps its record and the claim's status is not written.
func TestNothingIsDecidedWhileTheClusterCannotBeObserved(t *testing.T) {
	record := v1alpha1.ClaimRecord{Namespace: "team-a", Name: "shop", Shard: "shop-team-a", Replicas: 2,
		Phase: v1alpha1.ClaimBound, EverBound: true, Ingresses: []string{"web"}}
	for _, tc := range []struct {
		name  string
		edit  func(ci *v1alpha1.ClusterIngress)
		world func(w *claimWorld)
	}{
		{name: "not engaged", world: func(w *claimWorld) { w.access.Disengage(w.key) }},
		{name: "unreachable", world: func(w *claimWorld) { w.user.St.Phase = clusteraccess.PhaseUnreachable }},
		{name: "its cache not synced", world: func(w *claimWorld) { w.user.Unsynced = true }},
		{name: "no IngressClaim CRD", world: func(w *claimWorld) { w.user.Caps.CRDs = false }},
		{name: "no domain", edit: func(ci *v1alpha1.ClusterIngress) { ci.Status.Domain = "" }},
		{name: "being deleted", edit: func(ci *v1alpha1.ClusterIngress) {
			ci.Finalizers, ci.DeletionTimestamp = []string{"test/hold"}, ptr.To(metav1.Now())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newClaimWorld(t, func(ci *v1alpha1.ClusterIngress) {
				ci.Status.Claims = []v1alpha1.ClaimRecord{record}
				if tc.edit != nil {
					tc.edit(ci)
				}
			})
			if tc.world != nil {
				tc.world(w)
			}
			if res := w.reconcile(t); res != (ctrl.Result{}) {
				t.Errorf("result %+v", res)
			}
			if got := w.cluster(t).Status.Claims; len(got) != 1 || got[0].Phase != v1alpha1.ClaimBound || got[0].Shard != record.Shard {
				t.Errorf("status.claims %+v, want the record kept", got)
			}
			if st := w.claim(t).Status; st.Phase != "" || len(st.Conditions) != 0 {
				t.Errorf("the claim's status was written: %+v", st)
			}
			if e := w.drained(); len(e) != 0 {
				t.Errorf("events %v", e)
			}
		})
	}
}

// TestAClaimIsAdmittedThenBoundAsItsRoutersGetReady: the first pass admits the claim (a shard of
// its own, its Ingress bound), Pending until its routers are ready, looked at again soon; once
// the router Deployment in the user cluster has ready replicas the claim is Bound and says how
// many. Each phase change is one event on the ClusterIngress; a pass that changes nothing
// writes nothing.
func TestAClaimIsAdmittedThenBoundAsItsRoutersGetReady(t *testing.T) {
	ctx := context.Background()
	w := newClaimWorld(t, nil)

	res := w.reconcile(t)
	recs := w.cluster(t).Status.Claims
	if len(recs) != 1 || recs[0].Shard == "" || recs[0].Phase != v1alpha1.ClaimPending ||
		!slices.Equal(recs[0].Ingresses, []string{"web"}) {
		t.Fatalf("status.claims %+v", recs)
	}
	shard := recs[0].Shard
	if res.RequeueAfter != 5*time.Second {
		t.Errorf("pending: requeue after %s, want 5s", res.RequeueAfter)
	}
	st := w.claim(t).Status
	bound := meta.FindStatusCondition(st.Conditions, "Bound")
	if st.Phase != v1alpha1.ClaimPending || st.Shard != shard || st.Domain != names.ShardDomain(shard, "c1.z.test") ||
		st.BoundCount != 1 || bound == nil || bound.Status != metav1.ConditionFalse ||
		bound.Reason != v1alpha1.ReasonClaimProvisioning || bound.ObservedGeneration != 1 {
		t.Fatalf("claim status %+v", st)
	}
	if e := w.drained(); len(e) != 1 || !strings.HasPrefix(e[0], corev1.EventTypeNormal+" ClaimPending ") {
		t.Errorf("events %v", e)
	}

	must(t, w.user.Client.Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: names.Namespace,
		Name: names.RouterName(shard)}, Status: appsv1.DeploymentStatus{ReadyReplicas: 2}}))
	if res := w.reconcile(t); res.RequeueAfter != 0 {
		t.Errorf("bound: requeue after %s", res.RequeueAfter)
	}
	if recs := w.cluster(t).Status.Claims; len(recs) != 1 || recs[0].Phase != v1alpha1.ClaimBound || recs[0].Shard != shard {
		t.Fatalf("status.claims %+v", recs)
	}
	st = w.claim(t).Status
	if bound := meta.FindStatusCondition(st.Conditions, "Bound"); st.Phase != v1alpha1.ClaimBound || st.ReadyReplicas != 2 ||
		bound == nil || bound.Status != metav1.ConditionTrue {
		t.Fatalf("claim status %+v", st)
	}
	if e := w.drained(); len(e) != 1 || !strings.HasPrefix(e[0], corev1.EventTypeNormal+" ClaimBound ") {
		t.Errorf("events %v", e)
	}

	ciRV, claimRV := w.cluster(t).ResourceVersion, w.claim(t).ResourceVersion
	w.reconcile(t)
	if w.cluster(t).ResourceVersion != ciRV || w.claim(t).ResourceVersion != claimRV {
		t.Error("a pass that changed nothing wrote")
	}
	if e := w.drained(); len(e) != 0 {
		t.Errorf("events %v", e)
	}
}

// TestAClaimTheProfileDoesNotAllowFails: refused with the reason on the claim and a warning on
// the ClusterIngress; nothing is provisioned (no shard) and nothing is looked at again.
func TestAClaimTheProfileDoesNotAllowFails(t *testing.T) {
	w := newClaimWorld(t, func(ci *v1alpha1.ClusterIngress) { ci.Spec.Claims.Allowed = false })
	if res := w.reconcile(t); res != (ctrl.Result{}) {
		t.Errorf("result %+v", res)
	}
	if recs := w.cluster(t).Status.Claims; len(recs) != 1 || recs[0].Phase != v1alpha1.ClaimFailed || recs[0].Shard != "" {
		t.Fatalf("status.claims %+v", recs)
	}
	st := w.claim(t).Status
	if bound := meta.FindStatusCondition(st.Conditions, "Bound"); st.Phase != v1alpha1.ClaimFailed || st.Domain != "" ||
		bound == nil || bound.Status != metav1.ConditionFalse || bound.Reason != v1alpha1.ReasonClaimsNotAllowed {
		t.Fatalf("claim status %+v", st)
	}
	if e := w.drained(); len(e) != 1 || !strings.HasPrefix(e[0], corev1.EventTypeWarning+" ClaimFailed ") {
		t.Errorf("events %v", e)
	}
}

// TestAClaimBeingDeletedIsNotDecided: a claim with a deletion timestamp gets no record (its
// shard is not provisioned) and its status is not written.
func TestAClaimBeingDeletedIsNotDecided(t *testing.T) {
	w := newClaimWorld(t, nil)
	c := w.claim(t)
	c.Finalizers = []string{"test/hold"}
	must(t, w.user.Client.Update(context.Background(), c))
	must(t, w.user.Client.Delete(context.Background(), c))
	w.reconcile(t)
	if recs := w.cluster(t).Status.Claims; len(recs) != 0 {
		t.Errorf("status.claims %+v", recs)
	}
	if st := w.claim(t).Status; st.Phase != "" {
		t.Errorf("claim status %+v", st)
	}
}

// TestAnUnreadableUserClusterDecidesNothing: a failed read of the user cluster is an error (the
// queue retries) that says what failed without the server's words, and status.claims stays.
func TestAnUnreadableUserClusterDecidesNothing(t *testing.T) {
	record := v1alpha1.ClaimRecord{Namespace: "team-a", Name: "shop", Shard: "shop-team-a", Phase: v1alpha1.ClaimBound}
	w := newClaimWorld(t, func(ci *v1alpha1.ClusterIngress) { ci.Status.Claims = []v1alpha1.ClaimRecord{record} })
	w.user.Client = interceptor.NewClient(w.user.Client.(client.WithWatch), interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*networkingv1.IngressList); ok {
				return errors.New("owner-controlled text <script>")
			}
			return c.List(ctx, list, opts...)
		}})
	_, err := w.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: w.key})
	if err == nil || !strings.Contains(err.Error(), "ingresses") || strings.Contains(err.Error(), "<script>") {
		t.Fatalf("error %v: want one naming the read, without the server's text", err)
	}
	if recs := w.cluster(t).Status.Claims; len(recs) != 1 || !equality.Semantic.DeepEqual(recs[0], record) {
		t.Errorf("status.claims %+v", recs)
	}
}
