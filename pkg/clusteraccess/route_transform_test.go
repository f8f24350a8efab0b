package clusteraccess

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/ingressclass"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/watchcache"
)

// bloatedMeta is what a tenant can put on any object: a 200 KiB last-applied configuration,
// another large annotation, managedFields, owners and finalizers.
func bloatedMeta(ns, name string, keep map[string]string) metav1.ObjectMeta {
	ann := map[string]string{
		"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("x", 200<<10),
		"example.com/notes": strings.Repeat("y", 100<<10), "shardgate.io/anything-else": strings.Repeat("z", 100<<10),
	}
	for k, v := range keep {
		ann[k] = v
	}
	return metav1.ObjectMeta{Namespace: ns, Name: name, UID: "u1", ResourceVersion: "7", Generation: 3,
		Labels: map[string]string{"app": "shop", v1alpha1.ShardLabel: "default"}, Annotations: ann,
		ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl", FieldsV1: fieldsV1([]byte(`{"f:metadata":{}}`))}},
		OwnerReferences: []metav1.OwnerReference{{Name: "owner"}}, Finalizers: []string{"example.com/f"}}
}

func size(t *testing.T, o any) int {
	t.Helper()
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

// TestRouteTransformsKeepWhatIsRead: the route kinds, claims and RoutedIPs lose every annotation
// Shardgate does not read (the last-applied configuration, other tools' settings, its own prefix
// with a name it does not read), managedFields, owners and finalizers, and keep identity, labels,
// the annotations read (allocation, legacy class, default-class marks), spec and status; so
// a half-megabyte Ingress is cached in under a kilobyte and decides as before. Shardgate's own
// objects (its namespace, its IngressClass, its canary routes) stay whole.
func TestRouteTransformsKeepWhatIsRead(t *testing.T) {
	class := "other"
	read := map[string]string{v1alpha1.AllocationAnnotation: v1alpha1.AllocationAllocated, v1alpha1.ShardAnnotation: "default",
		v1alpha1.HostsAnnotation: "a.c1.example.org", v1alpha1.CNAMETargetAnnotation: "c1.example.org", ingressclass.LegacyClassAnnotation: class}
	ing := &networkingv1.Ingress{ObjectMeta: bloatedMeta("team", "shop", read),
		Spec:   networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "a.c1.example.org"}}},
		Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{Ingress: []networkingv1.IngressLoadBalancerIngress{{Hostname: "c1.example.org"}}}}}
	out, _ := TrimIngress(ing.DeepCopy())
	got := out.(*networkingv1.Ingress)
	if !equality.Semantic.DeepEqual(got.Annotations, read) {
		t.Errorf("annotations %v, want only those read", keys(got.Annotations))
	}
	if got.Name != "shop" || got.Namespace != "team" || got.UID != "u1" || got.ResourceVersion != "7" || got.Generation != 3 ||
		!equality.Semantic.DeepEqual(got.Labels, ing.Labels) || !equality.Semantic.DeepEqual(got.Spec, ing.Spec) ||
		!equality.Semantic.DeepEqual(got.Status, ing.Status) {
		t.Errorf("a field read was lost: %+v", got)
	}
	if got.ManagedFields != nil || got.OwnerReferences != nil || got.Finalizers != nil {
		t.Errorf("managedFields, owners or finalizers kept: %+v", got.ObjectMeta)
	}
	if ingressclass.Ours(got, true) != ingressclass.Ours(ing, true) {
		t.Error("the trimmed Ingress's class differs")
	}
	if s := size(t, got); s > 1<<10 {
		t.Errorf("trimmed Ingress is %d bytes", s)
	}

	ns := &corev1.Namespace{ObjectMeta: bloatedMeta("", "team", nil), Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	out, _ = TrimNamespace(ns.DeepCopy())
	if n := out.(*corev1.Namespace); n.Annotations != nil || !equality.Semantic.DeepEqual(n.Labels, ns.Labels) || n.Name != "team" {
		t.Errorf("namespace trimmed to %+v", n.ObjectMeta)
	}

	defaults := map[string]string{ingressclass.DefaultClassAnnotation: "true"}
	ic := &networkingv1.IngressClass{ObjectMeta: bloatedMeta("", "nginx", defaults)}
	out, _ = TrimIngressClass(ic.DeepCopy())
	if c := out.(*networkingv1.IngressClass); !equality.Semantic.DeepEqual(c.Annotations, defaults) || c.Name != "nginx" {
		t.Errorf("IngressClass annotations %v", keys(c.Annotations))
	}

	claim := &v1alpha1.IngressClaim{ObjectMeta: bloatedMeta("team", "shop", nil), Spec: v1alpha1.IngressClaimSpec{Ingresses: []corev1.LocalObjectReference{{Name: "shop"}}},
		Status: v1alpha1.IngressClaimStatus{Shard: "shop-team"}}
	out, _ = TrimIngressClaim(claim.DeepCopy())
	if c := out.(*v1alpha1.IngressClaim); c.Annotations != nil || !equality.Semantic.DeepEqual(c.Spec, claim.Spec) ||
		!equality.Semantic.DeepEqual(c.Status, claim.Status) || c.Generation != 3 {
		t.Errorf("claim trimmed to %+v", c)
	}
	rip := &v1alpha1.RoutedIP{ObjectMeta: bloatedMeta("team", "ip", nil), Spec: v1alpha1.RoutedIPSpec{Address: "192.0.2.1", ClassName: "c"},
		Status: v1alpha1.RoutedIPStatus{AssignedNode: "n1"}}
	out, _ = TrimRoutedIP(rip.DeepCopy())
	if r := out.(*v1alpha1.RoutedIP); r.Annotations != nil || !equality.Semantic.DeepEqual(r.Spec, rip.Spec) ||
		!equality.Semantic.DeepEqual(r.Status, rip.Status) {
		t.Errorf("RoutedIP trimmed to %+v", r)
	}

	// Shardgate's own: compared with what it renders, so whole.
	canary := &networkingv1.Ingress{ObjectMeta: bloatedMeta(names.Namespace, "canary-default", nil)}
	own := &corev1.Namespace{ObjectMeta: bloatedMeta("", names.Namespace, nil)}
	ownClass := &networkingv1.IngressClass{ObjectMeta: bloatedMeta("", names.IngressClassName, nil)}
	for _, tc := range []struct {
		obj  any
		trim func(any) (any, error)
	}{{canary, TrimIngress}, {own, TrimNamespace}, {ownClass, TrimIngressClass}} {
		if out, _ := tc.trim(tc.obj); out != tc.obj {
			t.Errorf("Shardgate's own %T was trimmed", tc.obj)
		}
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestCacheKindsHaveBudgetsAndTrims: every kind the user-cluster cache holds has the budget,
// and every kind a tenant or owner fills at will is trimmed.
func TestCacheKindsHaveBudgetsAndTrims(t *testing.T) {
	for _, k := range cacheKinds(Capabilities{AdmissionPolicy: true, CRDs: true}, budget{objects: 100, bytes: 1 << 20}, nil) {
		name := kindName(k.Object)
		if k.MaxObjects < 100 || k.MaxBytes < 1<<20 {
			t.Errorf("%s: budget %d objects, %d bytes", name, k.MaxObjects, k.MaxBytes)
		}
		switch name {
		case "Ingress", "Namespace", "IngressClass", "IngressClaim", "RoutedIP", "Node", "EndpointSlice":
			if k.Transform == nil {
				t.Errorf("%s is cached whole", name)
			}
		}
	}
}

// TestBudgetMakesTheClusterUnobservable: a kind over its budget makes the cluster Unreachable
// with FailureBudget (ClusterReachable=False/ObjectBudgetExceeded), naming the kind and the
// limit; neither the health probe nor the first sync make it Reachable again; the kind back
// within its budget does.
func TestBudgetMakesTheClusterUnobservable(t *testing.T) {
	e, err := NewEngager(Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := newEngaged(e, types.NamespacedName{Namespace: "default", Name: "c1"}, [32]byte{}, &rest.Config{})
	state := func() State {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.state
	}
	c.budget("Ingress", &watchcache.BudgetError{Kind: "Ingress", Limit: 10000})
	st := state()
	if st.Phase != PhaseUnreachable || st.Reason != string(FailureBudget) ||
		!strings.Contains(st.Message, "more than 10000 Ingress objects") {
		t.Fatalf("over budget: %+v", st)
	}
	c.mu.Lock()
	c.synced = true
	c.mu.Unlock()
	c.reachable("health probe succeeded")
	if st := state(); st.Phase != PhaseUnreachable || st.Reason != string(FailureBudget) {
		t.Fatalf("a probe made a cluster over budget %s", st.Phase)
	}
	if (engagedView{c: c}).Observable() {
		t.Fatal("a cluster over budget is observable: controllers would decide from a cache that stopped")
	}
	c.budget("Ingress", nil)
	if st := state(); st.Phase != PhaseReachable {
		t.Fatalf("back within budget: %+v", st)
	}
}
