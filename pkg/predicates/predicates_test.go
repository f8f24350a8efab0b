package predicates

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

func TestPredicates(t *testing.T) {
	base := func() *v1alpha1.ClusterIngress {
		return &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Generation: 1, Finalizers: []string{"a"}, Annotations: map[string]string{"k": "v"}},
			Status: v1alpha1.ClusterIngressStatus{Domain: "c1.z", Certificate: &v1alpha1.CertificateStatus{Name: "c1-tls", SerialNumber: "01"}}}
	}
	now := metav1.Now()
	for _, tt := range []struct {
		name                string
		mutate              func(*v1alpha1.ClusterIngress)
		metadata, dom, cert bool
	}{
		{"status only", func(c *v1alpha1.ClusterIngress) { c.Status.Routes = 3 }, false, false, false},
		{"spec", func(c *v1alpha1.ClusterIngress) { c.Generation++ }, true, false, false},
		{"deletion", func(c *v1alpha1.ClusterIngress) { c.DeletionTimestamp = &now }, true, false, false},
		{"finalizer", func(c *v1alpha1.ClusterIngress) { c.Finalizers = nil }, true, false, false},
		{"annotation", func(c *v1alpha1.ClusterIngress) { c.Annotations["k"] = "w" }, true, false, false},
		{"domain", func(c *v1alpha1.ClusterIngress) { c.Status.Domain = "c2.z" }, false, true, false},
		{"renewed", func(c *v1alpha1.ClusterIngress) { c.Status.Certificate.SerialNumber = "02" }, false, false, true},
		{"tls off", func(c *v1alpha1.ClusterIngress) { c.Status.Certificate = nil }, false, false, true},
		{"renewal time only", func(c *v1alpha1.ClusterIngress) { c.Status.Certificate.RenewalTime = &now }, false, false, false},
	} {
		n := base()
		tt.mutate(n)
		e := event.UpdateEvent{ObjectOld: base(), ObjectNew: n}
		if got := MetadataOrSpecChanged.Update(e); got != tt.metadata {
			t.Errorf("%s: MetadataOrSpecChanged %v", tt.name, got)
		}
		if got := DomainChanged.Update(e); got != tt.dom {
			t.Errorf("%s: DomainChanged %v", tt.name, got)
		}
		if got := CertificateChanged.Update(e); got != tt.cert {
			t.Errorf("%s: CertificateChanged %v", tt.name, got)
		}
	}
}

// TestClaimsChangedByWhatAClaimBinds: a claim binding another route of any kind wakes the
// controllers that follow claims (allocation pins the route, DNS names the shard); a new message
// alone does not.
func TestClaimsChangedByWhatAClaimBinds(t *testing.T) {
	base := func() *v1alpha1.ClusterIngress {
		return &v1alpha1.ClusterIngress{Status: v1alpha1.ClusterIngressStatus{Claims: []v1alpha1.ClaimRecord{{
			Namespace: "a", Name: "shop", Shard: "shop-a", Phase: v1alpha1.ClaimBound, Message: "m"}}}}
	}
	for _, tt := range []struct {
		name   string
		mutate func(*v1alpha1.ClaimRecord)
		want   bool
	}{
		{"an Ingress", func(c *v1alpha1.ClaimRecord) { c.Ingresses = []string{"web"} }, true},
		{"an HTTPRoute", func(c *v1alpha1.ClaimRecord) { c.HTTPRoutes = []string{"web"} }, true},
		{"a GRPCRoute", func(c *v1alpha1.ClaimRecord) { c.GRPCRoutes = []string{"rpc"} }, true},
		{"the phase", func(c *v1alpha1.ClaimRecord) { c.Phase = v1alpha1.ClaimReleased }, true},
		{"the message only", func(c *v1alpha1.ClaimRecord) { c.Message = "n" }, false},
	} {
		n := base()
		tt.mutate(&n.Status.Claims[0])
		if got := ClaimsChanged.Update(event.UpdateEvent{ObjectOld: base(), ObjectNew: n}); got != tt.want {
			t.Errorf("%s: ClaimsChanged %v, want %v", tt.name, got, tt.want)
		}
	}
}
