package shards

import (
	"context"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/ingressclass"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/test/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

func newCI(t *testing.T, c client.Client, ns string, shards ...v1alpha1.ShardSpec) types.NamespacedName {
	t.Helper()
	ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c1"}, Spec: v1alpha1.ClusterIngressSpec{
		ClusterRef: v1alpha1.ClusterReference{Kind: v1alpha1.SourceKindSecret, Name: "c1"}, Profile: "p", ClusterID: "c1",
		DNS: v1alpha1.ResolveDNS(v1alpha1.DNSSettings{Zone: "z.test"}, ""), Shards: v1alpha1.ResolveShards(shards)}}
	if err := c.Create(context.Background(), ci); err != nil {
		t.Fatal(err)
	}
	ci.Status.Domain = "c1.z.test"
	if err := c.Status().Update(context.Background(), ci); err != nil {
		t.Fatal(err)
	}
	return client.ObjectKeyFromObject(ci)
}

func conditionOf(t *testing.T, c client.Client, key types.NamespacedName, typ string) *metav1.Condition {
	t.Helper()
	ci := &v1alpha1.ClusterIngress{}
	if err := c.Get(context.Background(), key, ci); err != nil {
		t.Fatal(err)
	}
	return meta.FindStatusCondition(ci.Status.Conditions, typ)
}

// posted is the condition of type typ the reconciler posted for key (the DNS controller writes it).
func posted(t *testing.T, r *Reconciler, key types.NamespacedName, typ string) *metav1.Condition {
	t.Helper()
	c, ok := r.Board.Posted(key, typ)
	if !ok {
		t.Fatalf("no %s posted", typ)
	}
	return &c
}

func exists(t *testing.T, c client.Client, obj client.Object, key client.ObjectKey) bool {
	t.Helper()
	err := c.Get(context.Background(), key, obj)
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

func TestShardsAreDeployedRepairedAndRemoved(t *testing.T) {
	seed := controllertest.Seed(t)
	ns := controllertest.Namespace(t, seed.Client)
	access := clusteraccess.NewFake()
	r := &Reconciler{Client: seed.Client, Access: access, Board: cistatus.NewBoard(seed.Client)}
	key := newCI(t, seed.Client, ns, v1alpha1.ShardSpec{Name: "default", NodeSelector: map[string]string{"role": "edge", "zone": "a"}})
	user := controllertest.UserCluster(access, key)
	user.Caps = clusteraccess.Capabilities{AdmissionPolicy: true, Version: "v1.37"}
	u := user.Client
	controllertest.Reconcile(t, r, key, 2)

	router := client.ObjectKey{Namespace: names.Namespace, Name: names.RouterName("default")}
	d := &appsv1.Deployment{}
	if !exists(t, u, d, router) || d.Spec.Template.Spec.NodeSelector["zone"] != "a" {
		t.Fatalf("router Deployment: %+v", d.Spec.Template.Spec.NodeSelector)
	}
	for _, o := range []struct {
		obj client.Object
		key client.ObjectKey
	}{
		{&corev1.Namespace{}, client.ObjectKey{Name: names.Namespace}},
		{&networkingv1.IngressClass{}, client.ObjectKey{Name: names.IngressClassName}},
		{&corev1.ConfigMap{}, client.ObjectKey{Namespace: names.UserInfoNamespace, Name: names.UserInfoName}},
		{&admissionregistrationv1.ValidatingAdmissionPolicy{}, client.ObjectKey{Name: "shardgate-allocation"}},
	} {
		if !exists(t, u, o.obj, o.key) {
			t.Errorf("%T %s not applied", o.obj, o.key)
		}
	}
	if c := posted(t, r, key, v1alpha1.ConditionShardsAvailable); c.Reason != v1alpha1.ReasonNoNodeMatchesSelector {
		t.Errorf("ShardsAvailable: %+v", c)
	}
	if c := posted(t, r, key, v1alpha1.ConditionRoutesProtected); c.Status != metav1.ConditionTrue {
		t.Errorf("RoutesProtected: %+v", c)
	}
	// No other default class: the shardgate class is made the default, once.
	class := &networkingv1.IngressClass{}
	exists(t, u, class, client.ObjectKey{Name: names.IngressClassName})
	if class.Annotations[ingressclass.DefaultClassAnnotation] != "true" {
		t.Errorf("default class mark: %v", class.Annotations)
	}

	// Ready routers: available.
	d.Status.ReadyReplicas = 1
	if err := u.Status().Update(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	controllertest.Reconcile(t, r, key, 1)
	if c := posted(t, r, key, v1alpha1.ConditionShardsAvailable); c.Status != metav1.ConditionTrue {
		t.Errorf("ShardsAvailable: %+v", c)
	}

	// A field dropped from the shard spec leaves the Deployment.
	ci := &v1alpha1.ClusterIngress{}
	if err := seed.Client.Get(context.Background(), key, ci); err != nil {
		t.Fatal(err)
	}
	ci.Spec.Shards[0].NodeSelector = map[string]string{"role": "edge"}
	if err := seed.Client.Update(context.Background(), ci); err != nil {
		t.Fatal(err)
	}
	controllertest.Reconcile(t, r, key, 1)
	exists(t, u, d, router)
	if _, ok := d.Spec.Template.Spec.NodeSelector["zone"]; ok || d.Spec.Template.Spec.NodeSelector["role"] != "edge" {
		t.Errorf("nodeSelector after the key was dropped: %v", d.Spec.Template.Spec.NodeSelector)
	}

	// A deleted router object is repaired; a removed shard is pruned.
	if err := u.Delete(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	controllertest.Reconcile(t, r, key, 1)
	if !exists(t, u, &appsv1.Deployment{}, router) {
		t.Fatal("deleted router not repaired")
	}

	// Unobservable: nothing is touched.
	user.St = clusteraccess.State{Phase: clusteraccess.PhaseUnreachable}
	controllertest.Reconcile(t, r, key, 1)
	if c := posted(t, r, key, v1alpha1.ConditionShardsAvailable); c.Status != metav1.ConditionUnknown {
		t.Errorf("ShardsAvailable while unobservable: %+v", c)
	}
	// Deleted while unobservable: waits, CleanupPending; observable again: everything goes.
	if err := seed.Client.Delete(context.Background(), ci); err != nil {
		t.Fatal(err)
	}
	controllertest.Reconcile(t, r, key, 1)
	if c := conditionOf(t, seed.Client, key, v1alpha1.ConditionShardsAvailable); c.Reason != v1alpha1.ReasonCleanupPending {
		t.Errorf("ShardsAvailable while deleting: %+v", c)
	}
	user.St = clusteraccess.State{}
	controllertest.Reconcile(t, r, key, 1)
	for _, o := range []struct {
		obj client.Object
		key client.ObjectKey
	}{
		{&appsv1.Deployment{}, router},
		{&corev1.Namespace{}, client.ObjectKey{Name: names.Namespace}},
		{&networkingv1.IngressClass{}, client.ObjectKey{Name: names.IngressClassName}},
		{&corev1.ConfigMap{}, client.ObjectKey{Namespace: names.UserInfoNamespace, Name: names.UserInfoName}},
		{&admissionregistrationv1.ValidatingAdmissionPolicy{}, client.ObjectKey{Name: "shardgate-allocation"}},
	} {
		if exists(t, u, o.obj, o.key) {
			t.Errorf("%T %s left behind", o.obj, o.key)
		}
	}
	if err := seed.Client.Get(context.Background(), key, &v1alpha1.ClusterIngress{}); !apierrors.IsNotFound(err) {
		t.Fatalf("finalizer not released: %v", err)
	}
}

func TestWithoutAdmissionPolicyAPI(t *testing.T) {
	seed := controllertest.Seed(t)
	ns := controllertest.Namespace(t, seed.Client)
	access := clusteraccess.NewFake()
	r := &Reconciler{Client: seed.Client, Access: access, Board: cistatus.NewBoard(seed.Client)}
	key := newCI(t, seed.Client, ns)
	user := controllertest.UserCluster(access, key)
	user.Caps = clusteraccess.Capabilities{Version: "v1.29"}
	controllertest.Reconcile(t, r, key, 2)
	if c := posted(t, r, key, v1alpha1.ConditionRoutesProtected); c.Reason != v1alpha1.ReasonPolicyUnsupported {
		t.Fatalf("RoutesProtected: %+v", c)
	}
	if exists(t, user.Client, &admissionregistrationv1.ValidatingAdmissionPolicy{}, client.ObjectKey{Name: "shardgate-allocation"}) {
		t.Fatal("a policy was applied to a cluster without the API")
	}
	// Best-effort cleanup of a cluster that is going away and cannot be observed.
	ci := &v1alpha1.ClusterIngress{}
	if err := seed.Client.Get(context.Background(), key, ci); err != nil {
		t.Fatal(err)
	}
	metav1.SetMetaDataAnnotation(&ci.ObjectMeta, v1alpha1.CleanupAnnotation, v1alpha1.CleanupBestEffort)
	if err := seed.Client.Update(context.Background(), ci); err != nil {
		t.Fatal(err)
	}
	if err := seed.Client.Delete(context.Background(), ci); err != nil {
		t.Fatal(err)
	}
	user.St = clusteraccess.State{Phase: clusteraccess.PhaseUnreachable}
	controllertest.Reconcile(t, r, key, 1)
	if err := seed.Client.Get(context.Background(), key, &v1alpha1.ClusterIngress{}); !apierrors.IsNotFound(err) {
		t.Fatalf("best-effort cleanup held the ClusterIngress: %v", err)
	}
}
