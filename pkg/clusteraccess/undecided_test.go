package clusteraccess

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/test/framework"
)

// TestUndecidedCountsRoutesWithoutADecision: against a real API server, a route added without
// Shardgate's decision is counted before its subscribers hear of it (an allocation pass telling
// statuses yields to it); one that carries a decision, a status-only update and a Namespace are not.
func TestUndecidedCountsRoutesWithoutADecision(t *testing.T) {
	cp := userAPIServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kc, err := framework.KubeconfigFromConfig(cp.Config, "user")
	if err != nil {
		t.Fatal(err)
	}
	e, c := engageObservable(t, kc)
	defer e.Stop()
	routes := e.Subscribe(ChangeRoutes)
	// changed makes a change and returns the count once its event arrived (or after 2 s when
	// none is expected).
	changed := func(name string, change func() error, event bool) uint64 {
		t.Helper()
		quiet(routes)
		if err := change(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !event {
			time.Sleep(2 * time.Second)
			return c.Undecided()
		}
		select {
		case <-routes:
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: no route event within 20 s", name)
		}
		return c.Undecided()
	}
	ingress := func(name string, ann map[string]string) *networkingv1.Ingress {
		return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Annotations: ann},
			Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: name + ".example.test"}}}}
	}
	before := changed("settle", func() error { return nil }, false)
	newRoute := ingress("new", nil)
	if got := changed("a new route", func() error { return cp.Client.Create(ctx, newRoute) }, true); got <= before {
		t.Fatalf("a new route without a decision: undecided %d, want more than %d", got, before)
	}
	before = c.Undecided()
	decided := ingress("decided", map[string]string{v1alpha1.AllocationAnnotation: v1alpha1.AllocationAllocated})
	if got := changed("a decided route", func() error { return cp.Client.Create(ctx, decided) }, true); got != before {
		t.Fatalf("a route that carries a decision: undecided %d, want %d", got, before)
	}
	newRoute.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "192.0.2.1"}}
	if got := changed("status only", func() error { return cp.Client.Status().Update(ctx, newRoute) }, false); got != before {
		t.Fatalf("a status-only update: undecided %d, want %d", got, before)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}
	if got := changed("a namespace", func() error { return cp.Client.Create(ctx, ns) }, true); got != before {
		t.Fatalf("a Namespace: undecided %d, want %d", got, before)
	}
}
