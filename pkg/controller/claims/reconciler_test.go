package claims

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/test/framework"
)

// TestClaimPastTheCertificatesNamesSaysSo: a cluster's certificate holds at most 100 names; the
// claim whose shard is left out says so on its status (its routes get no trusted certificate),
// and the claim that fits does not.
func TestClaimPastTheCertificatesNamesSaysSo(t *testing.T) {
	ctx := context.Background()
	seed := fake.NewClientBuilder().WithScheme(framework.Scheme()).WithStatusSubresource(&v1alpha1.ClusterIngress{}).Build()
	// The default shard and 97 more: 99 names; room for one claimed shard.
	shards := []v1alpha1.ShardSpec{{Name: v1alpha1.DefaultShardName}}
	for i := range 97 {
		shards = append(shards, v1alpha1.ShardSpec{Name: fmt.Sprintf("s%02d", i)})
	}
	ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c1"}, Spec: v1alpha1.ClusterIngressSpec{
		Shards: shards, Claims: v1alpha1.ClaimSettings{Allowed: true},
		TLS: v1alpha1.ResolveTLS(v1alpha1.TLSSettings{IssuerRef: &v1alpha1.IssuerReference{Name: "le"}})}}
	must(t, seed.Create(ctx, ci))
	ci.Status.Domain = "c1.z.test"
	applyStatus(t, seed, ci)
	key := client.ObjectKeyFromObject(ci)
	access := clusteraccess.NewFake()
	claim := func(ns string) *v1alpha1.IngressClaim {
		return &v1alpha1.IngressClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop", CreationTimestamp: metav1.Now()},
			Spec: v1alpha1.IngressClaimSpec{Ingresses: []corev1.LocalObjectReference{{Name: "web"}}, Replicas: 1}}
	}
	user := &clusteraccess.FakeCluster{Client: fake.NewClientBuilder().WithScheme(clusteraccess.UserClusterScheme()).
		WithObjects(claim("team-a"), claim("team-b")).WithStatusSubresource(&v1alpha1.IngressClaim{}).Build()}
	user.Caps.CRDs = true
	access.Add(key, user)
	r := &Reconciler{Client: seed, Access: access, Recorder: events.NewFakeRecorder(100), Board: cistatus.NewBoard(seed).WriteThrough()}
	controllertest.Reconcile(t, r, key, 2)

	covered := func(ns string) *metav1.Condition {
		c := &v1alpha1.IngressClaim{}
		must(t, user.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shop"}, c))
		if c.Status.Shard == "" {
			t.Fatalf("%s/shop was not admitted: %+v", ns, c.Status)
		}
		return meta.FindStatusCondition(c.Status.Conditions, ConditionCertificateCovered)
	}
	if c := covered("team-a"); c != nil {
		t.Errorf("the claim that fits says %+v", c)
	}
	if c := covered("team-b"); c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonNamesLeftOut {
		t.Errorf("the claim past 100 names: %+v", c)
	}
}

// applyStatus writes ci's status as Shardgate does (the status writer's apply), so the
// reconciler's later writes own and can remove what it holds.
func applyStatus(t *testing.T, seed client.Client, ci *v1alpha1.ClusterIngress) {
	t.Helper()
	b := cistatus.NewBoard(seed)
	b.Post(context.Background(), ci, cistatus.Identity) // the domain's owner
	must(t, b.Write(context.Background(), ci, cistatus.Claims))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A claim reclaimed with policy Delete keeps its record until it is really gone: with the delete
// failing, status.claims still holds it (reviewed main dropped the record first, and the next
// pass admitted the surviving claim as new, with routers that nothing ever reclaimed).
func TestReclaimedClaimKeepsItsRecordUntilDeleted(t *testing.T) {
	ctx := context.Background()
	failDelete := true
	rc := setUpReclaim(t, func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
		if failDelete {
			return apierrors.NewServiceUnavailable("the user API server has a moment's trouble")
		}
		return c.Delete(ctx, obj, opts...)
	})
	if _, err := rc.r.Reconcile(ctx, ctrl.Request{NamespacedName: rc.key}); err == nil {
		t.Fatal("a failed delete was not an error")
	}
	if recs := rc.records(t); len(recs) != 1 || recs[0].Shard != "shop" || !recs[0].EverBound {
		t.Fatalf("after a failed delete, status.claims is %+v: want the record kept", recs)
	}
	failDelete = false
	if _, err := rc.r.Reconcile(ctx, ctrl.Request{NamespacedName: rc.key}); err != nil {
		t.Fatal(err)
	}
	err := rc.user.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "shop"}, &v1alpha1.IngressClaim{})
	if recs := rc.records(t); len(recs) != 0 || !apierrors.IsNotFound(err) {
		t.Errorf("once deleted: status.claims %+v, the claim: %v", recs, err)
	}
}

// TestReclaimDeletesOnlyTheClaimItDecidedOn (attacker's review): a tenant's edit that lands
// after the pass read the claim (reclaimPolicy set to Retain, to keep the shard) is not deleted
// (the delete carries the claim's UID and resourceVersion as preconditions), and the record stays.
func TestReclaimDeletesOnlyTheClaimItDecidedOn(t *testing.T) {
	ctx := context.Background()
	edited := false
	rc := setUpReclaim(t, func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
		if !edited { // the tenant's edit lands between the pass's read and its delete
			edited = true
			cur := &v1alpha1.IngressClaim{}
			must(t, c.Get(ctx, client.ObjectKeyFromObject(obj), cur))
			cur.Spec.ReclaimPolicy = v1alpha1.ReclaimRetain
			must(t, c.Update(ctx, cur))
		}
		return c.Delete(ctx, obj, opts...)
	})
	_, _ = rc.r.Reconcile(ctx, ctrl.Request{NamespacedName: rc.key})
	if err := rc.user.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "shop"}, &v1alpha1.IngressClaim{}); err != nil {
		t.Fatalf("the claim, edited to reclaimPolicy Retain after the pass read it, was deleted: %v", err)
	}
	if recs := rc.records(t); len(recs) != 1 {
		t.Errorf("status.claims %+v: want the record kept", recs)
	}
}

type reclaim struct {
	r    *Reconciler
	seed client.Client
	user client.Client
	key  client.ObjectKey
}

func (rc reclaim) records(t *testing.T) []v1alpha1.ClaimRecord {
	got := &v1alpha1.ClusterIngress{}
	must(t, rc.seed.Get(context.Background(), rc.key, got))
	return got.Status.Claims
}

// setUpReclaim: claim team-a/shop (policy Delete) whose Ingresses have been gone for an hour,
// past the grace, so the next pass reclaims it; the user cluster's deletes go through onDelete.
func setUpReclaim(t *testing.T, onDelete func(context.Context, client.WithWatch, client.Object, ...client.DeleteOption) error) reclaim {
	ctx := context.Background()
	seed := fake.NewClientBuilder().WithScheme(framework.Scheme()).WithStatusSubresource(&v1alpha1.ClusterIngress{}).Build()
	ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c1"}, Spec: v1alpha1.ClusterIngressSpec{
		Shards: []v1alpha1.ShardSpec{{Name: v1alpha1.DefaultShardName}}, Claims: v1alpha1.ClaimSettings{Allowed: true}}}
	must(t, seed.Create(ctx, ci))
	gone := metav1.NewTime(time.Now().Add(-time.Hour))
	ci.Status.Domain = "c1.z.test"
	ci.Status.Claims = []v1alpha1.ClaimRecord{{Namespace: "team-a", Name: "shop", Shard: "shop", Replicas: 1,
		EverBound: true, IngressesGoneSince: &gone, Phase: v1alpha1.ClaimBound}}
	applyStatus(t, seed, ci)
	key := client.ObjectKeyFromObject(ci)
	claim := &v1alpha1.IngressClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "shop", Generation: 1,
		CreationTimestamp: metav1.Now()}, Spec: v1alpha1.IngressClaimSpec{ReclaimPolicy: v1alpha1.ReclaimDelete,
		Ingresses: []corev1.LocalObjectReference{{Name: "web"}}, Replicas: 1}}
	userClient := fake.NewClientBuilder().WithScheme(clusteraccess.UserClusterScheme()).WithObjects(claim).
		WithStatusSubresource(&v1alpha1.IngressClaim{}).WithInterceptorFuncs(interceptor.Funcs{Delete: onDelete}).Build()
	user := &clusteraccess.FakeCluster{Client: userClient}
	user.Caps.CRDs = true
	access := clusteraccess.NewFake()
	access.Add(key, user)
	r := &Reconciler{Client: seed, Access: access, Recorder: events.NewFakeRecorder(100), ReclaimGrace: time.Minute, Board: cistatus.NewBoard(seed).WriteThrough()}
	return reclaim{r: r, seed: seed, user: userClient, key: key}
}

// TestNoClaimsNoRouteLists: routes matter only to claims, so a cluster without any is not
// listed (allocating 10,000 Ingresses wakes this controller on each); once a claim exists, its
// Ingress is found and bound.
func TestNoClaimsNoRouteLists(t *testing.T) {
	ctx := context.Background()
	seed := fake.NewClientBuilder().WithScheme(framework.Scheme()).WithStatusSubresource(&v1alpha1.ClusterIngress{}).Build()
	ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c1"},
		Spec: v1alpha1.ClusterIngressSpec{Claims: v1alpha1.ClaimSettings{Allowed: true}}}
	must(t, seed.Create(ctx, ci))
	ci.Status.Domain = "c1.z.test"
	applyStatus(t, seed, ci)
	key := client.ObjectKeyFromObject(ci)
	routeLists := 0
	userClient := fake.NewClientBuilder().WithScheme(clusteraccess.UserClusterScheme()).
		WithObjects(&networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web"}}).
		WithStatusSubresource(&v1alpha1.IngressClaim{}).
		WithInterceptorFuncs(interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList,
			opts ...client.ListOption) error {
			if _, ok := list.(*networkingv1.IngressList); ok {
				routeLists++
			}
			return c.List(ctx, list, opts...)
		}}).Build()
	user := &clusteraccess.FakeCluster{Client: userClient}
	user.Caps.CRDs = true
	access := clusteraccess.NewFake()
	access.Add(key, user)
	r := &Reconciler{Client: seed, Access: access, Recorder: events.NewFakeRecorder(100), Board: cistatus.NewBoard(seed).WriteThrough()}
	controllertest.Reconcile(t, r, key, 2)
	if routeLists != 0 {
		t.Errorf("%d lists of Ingresses without any claim", routeLists)
	}

	must(t, userClient.Create(ctx, &v1alpha1.IngressClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "shop"},
		Spec: v1alpha1.IngressClaimSpec{Ingresses: []corev1.LocalObjectReference{{Name: "web"}}, Replicas: 1}}))
	controllertest.Reconcile(t, r, key, 2)
	c := &v1alpha1.IngressClaim{}
	must(t, userClient.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "shop"}, c))
	if routeLists == 0 || c.Status.BoundCount != 1 {
		t.Errorf("with a claim: %d lists of Ingresses, status %+v", routeLists, c.Status)
	}
}
