package allocation

import (
	"context"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/allocation"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// TestWriteKeepsWhatTheCacheTrimmed: the user-cluster cache holds Ingresses without the
// annotations Shardgate does not read (kubectl's last-applied configuration, other controllers'
// settings); writing a decision from such a copy, releasing it, or clearing a rejected one's
// address must leave those annotations and the user's labels on the live object.
func TestWriteKeepsWhatTheCacheTrimmed(t *testing.T) {
	ctx := context.Background()
	userAnnotations := map[string]string{"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("x", 4096),
		"nginx.ingress.kubernetes.io/rewrite-target": "/"}
	live := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "shop", Labels: map[string]string{"app": "shop"}, Annotations: userAnnotations},
		Spec:       networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: ""}}},
		Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{
			Ingress: []networkingv1.IngressLoadBalancerIngress{{Hostname: "c1.example.org"}}}},
	}
	w := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(live).WithStatusSubresource(&networkingv1.Ingress{}).Build()
	// cached is what the trimmed cache holds: the live object without the annotations.
	cached := func() *networkingv1.Ingress {
		t.Helper()
		c := &networkingv1.Ingress{}
		if err := w.Get(ctx, client.ObjectKeyFromObject(live), c); err != nil {
			t.Fatal(err)
		}
		for k := range userAnnotations {
			delete(c.Annotations, k)
		}
		return c
	}
	check := func(step string, wantAnnotation string) {
		t.Helper()
		got := &networkingv1.Ingress{}
		if err := w.Get(ctx, client.ObjectKeyFromObject(live), got); err != nil {
			t.Fatal(err)
		}
		for k, v := range userAnnotations {
			if got.Annotations[k] != v {
				t.Errorf("%s: annotation %s lost", step, k)
			}
		}
		if got.Labels["app"] != "shop" {
			t.Errorf("%s: label lost: %v", step, got.Labels)
		}
		if got.Annotations[v1alpha1.AllocationAnnotation] != wantAnnotation {
			t.Errorf("%s: allocation annotation %q, want %q", step, got.Annotations[v1alpha1.AllocationAnnotation], wantAnnotation)
		}
	}
	r := &Reconciler{}
	a := allocation.Allocation{Namespace: "team", Name: "shop", Shard: "default", Hosts: []string{"shop-team.c1.example.org"}}
	if wrote, err := r.write(ctx, newWritePass(nil, neverYield), w, routekinds.Ingress{}, cached(), a, true); err != nil || !wrote {
		t.Fatalf("allocate: %v %v", wrote, err)
	}
	check("allocated", v1alpha1.AllocationAllocated)

	rej := allocation.Allocation{Namespace: "team", Name: "shop", Rejected: true, Reason: "host taken"}
	if wrote, err := r.write(ctx, newWritePass(nil, neverYield), w, routekinds.Ingress{}, cached(), rej, true); err != nil || !wrote {
		t.Fatalf("reject: %v %v", wrote, err)
	}
	check("rejected", v1alpha1.AllocationRejected+": host taken")
	got := &networkingv1.Ingress{}
	_ = w.Get(ctx, client.ObjectKeyFromObject(live), got)
	if len(got.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("a rejected Ingress keeps its address: %v", got.Status.LoadBalancer.Ingress)
	}

	c := cached()
	released, _ := routekinds.Ingress{}.Released(c)
	if wrote, err := r.release(ctx, newWritePass(nil, neverYield), w, routekinds.Ingress{}, c, released); err != nil || !wrote {
		t.Fatalf("release: %v %v", wrote, err)
	}
	check("released", "")
}
