package clusteraccess

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/routekinds"
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

// TestRouteTransformsKeepWhatIsRead: namespaces, claims and RoutedIPs lose every annotation
// Shardgate does not read (the last-applied configuration, other tools' settings, its own prefix
// with a name it does not read), managedFields, owners and finalizers, and keep identity, labels,
// spec and status. Shardgate's own namespace stays whole. The route kinds' own trims are tested
// beside them (pkg/routekinds).
func TestRouteTransformsKeepWhatIsRead(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: bloatedMeta("", "team", nil), Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	out, _ := TrimNamespace(ns.DeepCopy())
	if n := out.(*corev1.Namespace); n.Annotations != nil || !equality.Semantic.DeepEqual(n.Labels, ns.Labels) || n.Name != "team" {
		t.Errorf("namespace trimmed to %+v", n.ObjectMeta)
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
	own := &corev1.Namespace{ObjectMeta: bloatedMeta("", names.Namespace, nil)}
	if out, _ := TrimNamespace(own); out != own {
		t.Error("Shardgate's own namespace was trimmed")
	}
}

// TestCacheKindsHaveBudgetsAndTrims: every kind the user-cluster cache holds has the budget,
// and every kind a tenant or owner fills at will is trimmed.
func TestCacheKindsHaveBudgetsAndTrims(t *testing.T) {
	for _, k := range cacheKinds(Capabilities{AdmissionPolicy: true, CRDs: true}, testRouteKinds, budget{objects: 100, bytes: 1 << 20}, nil) {
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
	e, err := NewEngager(Options{RouteKinds: testRouteKinds})
	if err != nil {
		t.Fatal(err)
	}
	c := newEngaged(e, types.NamespacedName{Namespace: "default", Name: "c1"}, [32]byte{}, Settings{}, &rest.Config{})
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

// testRouteKinds are what a seed controller registers.
var testRouteKinds = routekinds.Registry{routekinds.Ingress{}}
