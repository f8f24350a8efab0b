package clusteraccess

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/test/framework"
)

// TestObjectBudgetOfARealCluster: a user cluster with more Ingresses than the budget is
// Unreachable with FailureBudget (ClusterReachable=False/ObjectBudgetExceeded) naming the kind,
// and never observable; once Ingresses are deleted to within the budget, the next list (after
// the budget back-off) makes it observable again, every Ingress read trimmed.
func TestObjectBudgetOfARealCluster(t *testing.T) {
	cp := userAPIServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := client.New(cp.Config, client.Options{Scheme: UserClusterScheme()})
	if err != nil {
		t.Fatal(err)
	}
	const budget = 10
	for i := range budget + 2 {
		ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprint("ing-", i),
			Annotations: map[string]string{"example.com/big": strings.Repeat("x", 64<<10)}},
			Spec: networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{
				Service: &networkingv1.IngressServiceBackend{Name: "s", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}
		if err := admin.Create(ctx, ing); err != nil {
			t.Fatal(err)
		}
	}
	kc, err := framework.KubeconfigFromConfig(cp.Config, "user")
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngager(Options{RouteKinds: testRouteKinds, Log: logr.Discard(), MaxObjects: budget, BudgetRetry: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	key := types.NamespacedName{Namespace: "default", Name: "c1"}
	if err := e.Engage(key, kc, Settings{}); err != nil {
		t.Fatal(err)
	}
	var cl Cluster
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		var ok bool
		cl, ok = e.Get(key)
		if ok && cl.State().Reason == string(FailureBudget) {
			break
		}
		if ok && cl.Observable() {
			t.Fatal("a cluster over its budget is observable")
		}
		if time.Now().After(deadline) {
			t.Fatalf("the budget never tripped: %+v", cl.State())
		}
	}
	if st := cl.State(); st.Phase != PhaseUnreachable || !strings.Contains(st.Message, "more than 10 Ingress objects") {
		t.Fatalf("over budget: %+v", st)
	}
	for _, n := range []string{"ing-0", "ing-1", "ing-2"} {
		if err := admin.Delete(ctx, &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(time.Minute); !cl.Observable(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not observable once within the budget: %+v", cl.State())
		}
	}
	list := &networkingv1.IngressList{}
	if err := cl.Reader().List(ctx, list); err != nil || len(list.Items) != budget-1 {
		t.Fatalf("%d Ingresses read (%v), want %d", len(list.Items), err, budget-1)
	}
	for _, ing := range list.Items {
		if len(ing.Annotations) != 0 {
			t.Errorf("%s cached with annotations %v", ing.Name, len(ing.Annotations))
		}
	}
}
