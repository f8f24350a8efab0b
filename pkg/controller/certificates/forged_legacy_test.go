package certificates

import (
	"context"
	"testing"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/apidiscovery"
	"github.com/shardgate/shardgate/pkg/certs"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
)

// TestForgedLegacyCertificateIsNoRenewal: S writes Certificates in its own namespace (the
// cluster's namespace). It creates a "legacy" Certificate named <ci>-tls, controlled by its
// ClusterIngress (the UID is readable), for exactly the names it now wants, issued by a
// self-signed Issuer of its own so cert-manager marks it Ready. grant() then treats every new
// name set as a free "renewal": S (with O changing names through claims/shards) places
// unbounded new ACME orders against the seed's Let's Encrypt budget, starving every cluster.
func TestForgedLegacyCertificateIsNoRenewal(t *testing.T) {
	ctx := context.Background()
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = v1alpha1.AddToScheme(s)
	_ = cmapi.AddToScheme(s)
	now := time.Now()
	ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "c1", UID: "uid-1",
		CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))}}
	ci.Status.Domain = "c1.z.test"
	// a brand-new name set (a claim's shard) the cluster has never been issued
	wanted := []string{"*.c1.z.test", "*.evil.c1.z.test", "c1.z.test"}
	forged := &cmapi.Certificate{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: certs.LegacyCertificateName("c1"),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ClusterIngress", Name: "c1", UID: "uid-1", Controller: ptr.To(true)}}},
		Spec:   cmapi.CertificateSpec{SecretName: "x", DNSNames: wanted, IssuerRef: cmmeta.IssuerReference{Name: "my-selfsigned"}},
		Status: cmapi.CertificateStatus{Conditions: []cmapi.CertificateCondition{{Type: cmapi.CertificateConditionReady, Status: cmmeta.ConditionTrue}}}}
	// the seed's budget (1/week) is already spent by another cluster
	ledger := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shardgate-system", Name: LedgerName},
		Data: map[string]string{"orders": certs.FormatLedger([]certs.Order{{Cluster: "other/x", Names: "k", At: now.Add(-time.Hour)}}, now)}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(ci, forged, ledger).Build()
	api := &apidiscovery.API{}
	api.Found()
	r := &Reconciler{Client: c, APIReader: c, CertManager: api, Clock: clocktesting.NewFakePassiveClock(now), Namespace: "shardgate-system", OrdersPerWeek: 1, Board: cistatus.NewBoard(c).WriteThrough()}
	ok, _, err := r.grant(ctx, ci, wanted, false, now)
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		t.Fatalf("a tenant-written Certificate in the cluster's namespace granted a new ACME order past the seed's spent budget")
	}
}
