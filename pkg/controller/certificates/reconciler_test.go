package certificates

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/apidiscovery"
	"github.com/shardgate/shardgate/pkg/certs"
	"github.com/shardgate/shardgate/pkg/certs/certstest"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/test/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

var crdsOnce sync.Once

// seed is the shared seed API server with cert-manager's CRDs.
func seed(t *testing.T) client.Client {
	t.Helper()
	cp := controllertest.Seed(t)
	var err error
	crdsOnce.Do(func() { err = framework.InstallCertManagerCRDs(cp) })
	if err != nil {
		t.Fatal(err)
	}
	return cp.Client
}

func reconciler(c client.Client, certNS string, perWeek int, clk *clocktesting.FakePassiveClock) *Reconciler {
	api := &apidiscovery.API{}
	api.Found()
	return &Reconciler{Client: c, APIReader: c, CertManager: api, Clock: clk, Namespace: certNS, OrdersPerWeek: perWeek, Board: cistatus.NewBoard(c).WriteThrough()}
}

// newCI is a ClusterIngress with TLS through the Issuer "le" and its domain published.
func newCI(t *testing.T, c client.Client, ns, name string, shards ...v1alpha1.ShardSpec) *v1alpha1.ClusterIngress {
	t.Helper()
	ctx := context.Background()
	ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.ClusterIngressSpec{
		ClusterRef: v1alpha1.ClusterReference{Kind: v1alpha1.SourceKindSecret, Name: name}, Profile: "p", ClusterID: name,
		DNS: v1alpha1.ResolveDNS(v1alpha1.DNSSettings{Zone: "z.test"}, ""), Shards: v1alpha1.ResolveShards(shards),
		TLS: v1alpha1.ResolveTLS(v1alpha1.TLSSettings{IssuerRef: &v1alpha1.IssuerReference{Name: "le"}})}}
	must(t, c.Create(ctx, ci))
	ci.Status.Domain = name + ".z.test"
	must(t, c.Status().Update(ctx, ci))
	t.Cleanup(func() { _ = c.Delete(context.Background(), ci) })
	return ci
}

func issuer(t *testing.T, c client.Client, ns string) {
	t.Helper()
	must(t, c.Create(context.Background(), &cmapi.Issuer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "le"},
		Spec: cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{SelfSigned: &cmapi.SelfSignedIssuer{}}}}))
}

func readyCondition(t *testing.T, c client.Client, key types.NamespacedName) *metav1.Condition {
	t.Helper()
	ci := &v1alpha1.ClusterIngress{}
	must(t, c.Get(context.Background(), key, ci))
	return meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionCertificateReady)
}

func getCertificate(t *testing.T, c client.Client, certNS string, key types.NamespacedName) *cmapi.Certificate {
	t.Helper()
	cert := &cmapi.Certificate{}
	must(t, c.Get(context.Background(), client.ObjectKey{Namespace: certNS, Name: certs.CertificateName(key)}, cert))
	return cert
}

// markReady plays cert-manager: the Certificate is Ready.
func markReady(t *testing.T, c client.Client, cert *cmapi.Certificate) {
	t.Helper()
	cert.Status.Conditions = []cmapi.CertificateCondition{{Type: cmapi.CertificateConditionReady, Status: cmmeta.ConditionTrue, Reason: "Ready"}}
	must(t, c.Status().Update(context.Background(), cert))
}

// TestCertificatesAreShardgatesAlone: the Certificate and its Secret live in Shardgate's
// namespace (tenants of the seed cannot make the zone's issuer sign for them, nor edit what
// Shardgate asks for), with its issuer looked up there; a hand edit of its spec is put back; a
// key pair valid for any name beyond the cluster's is refused with a fixed reason and not
// reported as the cluster's; the Certificate goes with its cluster.
func TestCertificatesAreShardgatesAlone(t *testing.T) {
	ctx := context.Background()
	c := seed(t)
	ns, certNS := controllertest.Namespace(t, c), controllertest.Namespace(t, c)
	issuer(t, c, certNS)
	clk := clocktesting.NewFakePassiveClock(time.Now())
	r := reconciler(c, certNS, 20, clk)
	ci := newCI(t, c, ns, "c1")
	key := client.ObjectKeyFromObject(ci)
	want := []string{"*.c1.z.test", "c1.z.test"}

	controllertest.Reconcile(t, r, key, 1)
	cert := getCertificate(t, c, certNS, key)
	if !slices.Equal(cert.Spec.DNSNames, want) || cert.Spec.SecretName != certs.CertificateName(key) || cert.Spec.IssuerRef.Name != "le" {
		t.Fatalf("Certificate %+v", cert.Spec)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: certs.LegacyCertificateName("c1")}, &cmapi.Certificate{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a Certificate in the cluster's own namespace: %v", err)
	}
	if cond := readyCondition(t, c, key); cond == nil || cond.Reason == v1alpha1.ReasonIssuerNotFound {
		t.Fatalf("the Issuer in Shardgate's namespace was not found: %+v", cond)
	}

	// A hand edit: other clusters' names, a common name, another issuer. All put back.
	cert.Spec.DNSNames = append(cert.Spec.DNSNames, "*.victim.z.test")
	cert.Spec.CommonName = "victim.z.test"
	cert.Spec.IssuerRef.Name = "other"
	must(t, c.Update(ctx, cert))
	controllertest.Reconcile(t, r, key, 1)
	cert = getCertificate(t, c, certNS, key)
	if !slices.Equal(cert.Spec.DNSNames, want) || cert.Spec.CommonName != "" || cert.Spec.IssuerRef.Name != "le" {
		t.Fatalf("hand edit kept: %+v", cert.Spec)
	}

	// A key pair for the victim's names as well: refused, not reported as the cluster's.
	markReady(t, c, cert)
	now := clk.Now()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: certNS, Name: certs.CertificateName(key)}, Type: corev1.SecretTypeTLS,
		Data: certstest.TLSData(t, 7, append(slices.Clone(want), "*.victim.z.test"), now.Add(-time.Hour), now.Add(48*time.Hour))}
	must(t, c.Create(ctx, secret))
	controllertest.Reconcile(t, r, key, 1)
	cond := readyCondition(t, c, key)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != v1alpha1.ReasonCertificateUnexpectedNames || strings.Contains(cond.Message, "victim") {
		t.Fatalf("CertificateReady %+v", cond)
	}
	got := &v1alpha1.ClusterIngress{}
	must(t, c.Get(ctx, key, got))
	if got.Status.Certificate == nil || got.Status.Certificate.SerialNumber != "" || !slices.Equal(got.Status.Certificate.DNSNames, want) {
		t.Fatalf("status.certificate %+v", got.Status.Certificate)
	}

	// Exactly the cluster's names: issued.
	secret.Data = certstest.TLSData(t, 8, want, now.Add(-time.Hour), now.Add(48*time.Hour))
	must(t, c.Update(ctx, secret))
	controllertest.Reconcile(t, r, key, 1)
	if cond := readyCondition(t, c, key); cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != v1alpha1.ReasonCertificateIssued {
		t.Fatalf("CertificateReady %+v", cond)
	}

	// The cluster goes: so does its Certificate (no owner reference can reach across namespaces).
	must(t, c.Delete(ctx, ci))
	controllertest.Reconcile(t, r, key, 1)
	if err := c.Get(ctx, client.ObjectKey{Namespace: certNS, Name: certs.CertificateName(key)}, &cmapi.Certificate{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the Certificate outlived its cluster: %v", err)
	}
}

// TestMoveKeepsServingUntilTheNewCertificateIsReady: a cluster whose Certificate is still in its
// own namespace (before the move) gets one in Shardgate's namespace without spending the ACME
// budget (the same names: a renewal), and the old one stays (renewing, its key pair with the
// routers) until the new one is served.
func TestMoveKeepsServingUntilTheNewCertificateIsReady(t *testing.T) {
	ctx := context.Background()
	c := seed(t)
	ns, certNS := controllertest.Namespace(t, c), controllertest.Namespace(t, c)
	issuer(t, c, certNS)
	clk := clocktesting.NewFakePassiveClock(time.Now())
	r := reconciler(c, certNS, 1, clk)
	// The budget is spent by another cluster.
	must(t, c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: certNS, Name: LedgerName},
		Data: map[string]string{"orders": certs.FormatLedger([]certs.Order{{Cluster: "other/x", Names: "k", At: clk.Now().Add(-time.Hour)}}, clk.Now())}}))
	ci := newCI(t, c, ns, "c1")
	key := client.ObjectKeyFromObject(ci)
	want := []string{"*.c1.z.test", "c1.z.test"}
	legacy := &cmapi.Certificate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: certs.LegacyCertificateName("c1"),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ClusterIngress", Name: ci.Name, UID: ci.UID, Controller: ptr.To(true)}}},
		Spec: cmapi.CertificateSpec{SecretName: "c1-tls", DNSNames: []string{"c1.z.test", "*.c1.z.test"}, IssuerRef: cmmeta.IssuerReference{Name: "le"}}}
	must(t, c.Create(ctx, legacy))
	markReady(t, c, legacy)
	// What fe9d909 recorded for it: its name, names and the serial it saw issued (only this,
	// which no tenant writes, makes it a renewal; see TestForgedLegacyCertificateIsNoRenewal).
	ci.Status.Certificate = &v1alpha1.CertificateStatus{Name: legacy.Name, DNSNames: want, SerialNumber: "0a"}
	must(t, c.Status().Update(ctx, ci))

	controllertest.Reconcile(t, r, key, 1)
	cert := getCertificate(t, c, certNS, key)
	if !slices.Equal(cert.Spec.DNSNames, want) {
		t.Fatalf("the move waits for the budget, or asks for other names: %+v, %+v", cert.Spec.DNSNames, readyCondition(t, c, key))
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(legacy), &cmapi.Certificate{}); err != nil {
		t.Fatalf("the old Certificate went before the new one was served: %v", err)
	}
	ledger := &corev1.ConfigMap{}
	must(t, c.Get(ctx, client.ObjectKey{Namespace: certNS, Name: LedgerName}, ledger))
	if orders, _ := certs.ParseLedger(ledger.Data["orders"]); len(orders) != 1 {
		t.Fatalf("the move spent the budget: %v", orders)
	}

	markReady(t, c, cert)
	now := clk.Now()
	must(t, c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: certNS, Name: certs.CertificateName(key)}, Type: corev1.SecretTypeTLS,
		Data: certstest.TLSData(t, 9, want, now.Add(-time.Hour), now.Add(48*time.Hour))}))
	controllertest.Reconcile(t, r, key, 1)
	if cond := readyCondition(t, c, key); cond == nil || cond.Status != metav1.ConditionTrue {
		t.Fatalf("CertificateReady %+v", cond)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(legacy), &cmapi.Certificate{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the old Certificate stays after the move: %v", err)
	}
}

// TestACMEBudget: new orders (first certificates, new names) stay within the seed's budget;
// the cluster whose turn has not come says IssuanceQueued with the expected time, keeps its
// granted names (and the certificate it has), and renewals of unchanged names are not counted.
func TestACMEBudget(t *testing.T) {
	ctx := context.Background()
	c := seed(t)
	ns, certNS := controllertest.Namespace(t, c), controllertest.Namespace(t, c)
	issuer(t, c, certNS)
	start := time.Now().Truncate(time.Second)
	clk := clocktesting.NewFakePassiveClock(start)
	r := reconciler(c, certNS, 1, clk)
	old := newCI(t, c, ns, "c1")
	time.Sleep(1100 * time.Millisecond) // creationTimestamp has seconds
	young := newCI(t, c, ns, "c2")
	k1, k2 := client.ObjectKeyFromObject(old), client.ObjectKeyFromObject(young)
	orders := func() []certs.Order {
		cm := &corev1.ConfigMap{}
		must(t, c.Get(ctx, client.ObjectKey{Namespace: certNS, Name: LedgerName}, cm))
		o, err := certs.ParseLedger(cm.Data["orders"])
		must(t, err)
		return o
	}
	queued := func(key types.NamespacedName, at time.Time) {
		t.Helper()
		cond := readyCondition(t, c, key)
		if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != v1alpha1.ReasonIssuanceQueued ||
			!strings.Contains(cond.Message, "expected at "+at.UTC().Format(time.RFC3339)) {
			t.Fatalf("%s: CertificateReady %+v, want IssuanceQueued until %s", key, cond, at)
		}
	}

	// The younger cluster asks first: the older one's first certificate goes first.
	res := controllertest.Reconcile(t, r, k2, 1)
	queued(k2, start.Add(certs.OrderWindow))
	if err := c.Get(ctx, client.ObjectKey{Namespace: certNS, Name: certs.CertificateName(k2)}, &cmapi.Certificate{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a queued cluster got a Certificate: %v", err)
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > queuedRecheck {
		t.Fatalf("queued: requeue after %s", res.RequeueAfter)
	}
	controllertest.Reconcile(t, r, k1, 1)
	cert := getCertificate(t, c, certNS, k1)
	if o := orders(); len(o) != 1 || o[0].Cluster != k1.String() {
		t.Fatalf("ledger %v", o)
	}
	// Renewals and passes with unchanged names spend nothing.
	markReady(t, c, cert)
	clk.SetTime(start.Add(time.Hour))
	controllertest.Reconcile(t, r, k1, 2)
	controllertest.Reconcile(t, r, k2, 1)
	if o := orders(); len(o) != 1 {
		t.Fatalf("ledger %v", o)
	}
	queued(k2, start.Add(certs.OrderWindow))

	// A tenant's claim changes c1's names: the new order waits (c2, which has not ordered this
	// week, is ahead of it); c1's Certificate keeps the names it was granted.
	must(t, c.Get(ctx, k1, old))
	old.Status.Claims = []v1alpha1.ClaimRecord{{Namespace: "team", Name: "shop", Shard: "shop-team", Replicas: 1}}
	must(t, c.Status().Update(ctx, old))
	controllertest.Reconcile(t, r, k1, 1)
	queued(k1, start.Add(2*certs.OrderWindow))
	if cert := getCertificate(t, c, certNS, k1); !slices.Equal(cert.Spec.DNSNames, []string{"*.c1.z.test", "c1.z.test"}) {
		t.Fatalf("queued names were asked for: %v", cert.Spec.DNSNames)
	}

	// A week later: c2's turn, then c1's a week after that.
	clk.SetTime(start.Add(certs.OrderWindow + time.Second))
	controllertest.Reconcile(t, r, k1, 1)
	queued(k1, start.Add(2*certs.OrderWindow+time.Second))
	controllertest.Reconcile(t, r, k2, 1)
	if cert := getCertificate(t, c, certNS, k2); !slices.Equal(cert.Spec.DNSNames, []string{"*.c2.z.test", "c2.z.test"}) {
		t.Fatalf("c2: %v", cert.Spec.DNSNames)
	}
	if o := orders(); len(o) != 1 || o[0].Cluster != k2.String() {
		t.Fatalf("ledger %v (the order of a week ago is pruned)", o)
	}
	clk.SetTime(start.Add(2*certs.OrderWindow + 2*time.Second))
	controllertest.Reconcile(t, r, k1, 1)
	if cert := getCertificate(t, c, certNS, k1); !slices.Contains(cert.Spec.DNSNames, "*.shop-team.c1.z.test") {
		t.Fatalf("c1's new names: %v", cert.Spec.DNSNames)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
