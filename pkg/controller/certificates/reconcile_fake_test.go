package certificates

import (
	"context"
	"slices"
	"strings"
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
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/apidiscovery"
	"github.com/shardgate/shardgate/pkg/certs"
	"github.com/shardgate/shardgate/pkg/certs/certstest"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/test/framework"
)

// These tests run Reconcile against controller-runtime's fake client, so its decisions are
// checked on every `go test` (reconciler_test.go needs a real API server and skips without the
// control-plane tools). Each case is one pass over one cluster, from the seed as the case leaves it.

const fakeCertNS = "shardgate-certs"

var fakeWant = []string{"*.c1.z.test", "c1.z.test"}

// certWorld is the seed one case starts from and what the pass left in it.
type certWorld struct {
	now         time.Time
	ci          *v1alpha1.ClusterIngress
	objs        []client.Object
	certManager bool
	namespace   string
	perWeek     int
	gone        bool // the ClusterIngress is not in the seed

	c     client.Client
	board *cistatus.Board
	key   types.NamespacedName
}

func newCertWorld() *certWorld {
	now := time.Now().Truncate(time.Second)
	ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "c1", UID: "uid-c1",
		CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))}, Spec: v1alpha1.ClusterIngressSpec{
		TLS: v1alpha1.ResolveTLS(v1alpha1.TLSSettings{IssuerRef: &v1alpha1.IssuerReference{Name: "le"}})}}
	ci.Status.Domain = "c1.z.test"
	issuer := &cmapi.Issuer{ObjectMeta: metav1.ObjectMeta{Namespace: fakeCertNS, Name: "le"}}
	return &certWorld{now: now, ci: ci, objs: []client.Object{issuer}, certManager: true, namespace: fakeCertNS,
		perWeek: 20, key: types.NamespacedName{Namespace: "tenant", Name: "c1"}}
}

// reconcile runs one pass of a Reconciler built on the world's seed.
func (w *certWorld) reconcile(t *testing.T) (ctrl.Result, error) {
	t.Helper()
	objs := slices.Clone(w.objs)
	if !w.gone {
		objs = append(objs, w.ci)
	}
	w.c = fake.NewClientBuilder().WithScheme(framework.Scheme()).WithObjects(objs...).
		WithStatusSubresource(&v1alpha1.ClusterIngress{}, &cmapi.Certificate{}).Build()
	api := &apidiscovery.API{}
	if w.certManager {
		api.Found()
	}
	w.board = cistatus.NewBoard(w.c)
	r := &Reconciler{Client: w.c, APIReader: w.c, CertManager: api, Clock: clocktesting.NewFakePassiveClock(w.now),
		Namespace: w.namespace, OrdersPerWeek: w.perWeek, Board: w.board}
	return r.Reconcile(context.Background(), ctrl.Request{NamespacedName: w.key})
}

// certificate is the cluster's Certificate in the certificate namespace (nil: none).
func (w *certWorld) certificate(t *testing.T) *cmapi.Certificate {
	t.Helper()
	c := &cmapi.Certificate{}
	err := w.c.Get(context.Background(), client.ObjectKey{Namespace: fakeCertNS, Name: certs.CertificateName(w.key)}, c)
	if apierrors.IsNotFound(err) {
		return nil
	}
	must(t, err)
	return c
}

// status is the cluster's status as the controller left it: what it posted to the board over what
// the seed holds (the board's writer, tested on a real API server in cistatus, stores it).
func (w *certWorld) status(t *testing.T) v1alpha1.ClusterIngressStatus {
	t.Helper()
	ci := &v1alpha1.ClusterIngress{}
	must(t, w.c.Get(context.Background(), w.key, ci))
	w.board.Overlay(ci)
	return ci.Status
}

func (w *certWorld) condition(t *testing.T) *metav1.Condition {
	t.Helper()
	st := w.status(t)
	return meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionCertificateReady)
}

func (w *certWorld) orders(t *testing.T) []certs.Order {
	t.Helper()
	cm := &corev1.ConfigMap{}
	err := w.c.Get(context.Background(), client.ObjectKey{Namespace: fakeCertNS, Name: LedgerName}, cm)
	if apierrors.IsNotFound(err) {
		return nil
	}
	must(t, err)
	o, err := certs.ParseLedger(cm.Data[ledgerKey])
	must(t, err)
	return o
}

// granted is the Certificate Shardgate renders for names, which cert-manager calls Ready.
func (w *certWorld) granted(names []string) *cmapi.Certificate {
	c := certs.Certificate(w.ci, fakeCertNS, names)
	c.Status.Conditions = []cmapi.CertificateCondition{{Type: cmapi.CertificateConditionReady, Status: cmmeta.ConditionTrue}}
	return c
}

// issued is the Secret cert-manager wrote for the cluster, a key pair for names valid for a day.
func (w *certWorld) issued(t *testing.T, names []string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: fakeCertNS, Name: certs.CertificateName(w.key)},
		Type: corev1.SecretTypeTLS, Data: certstest.TLSData(t, 42, names, w.now.Add(-time.Hour), w.now.Add(24*time.Hour))}
}

// legacy is the Certificate the cluster had in its own namespace before the move, controlled by it.
func (w *certWorld) legacy() *cmapi.Certificate {
	return &cmapi.Certificate{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: certs.LegacyCertificateName("c1"),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ClusterIngress",
			Name: "c1", UID: w.ci.UID, Controller: ptr.To(true)}}},
		Spec: cmapi.CertificateSpec{SecretName: "c1-tls", DNSNames: fakeWant, IssuerRef: cmmeta.IssuerReference{Name: "le"}}}
}

func (w *certWorld) exists(t *testing.T, obj client.Object) bool {
	t.Helper()
	err := w.c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

func wantCondition(t *testing.T, cond *metav1.Condition, status metav1.ConditionStatus, reason string) {
	t.Helper()
	if cond == nil || cond.Status != status || cond.Reason != reason {
		t.Fatalf("CertificateReady %+v, want %s %s", cond, status, reason)
	}
}

// TestReconcileDecides: what one pass writes and reports for each state of the seed.
func TestReconcileDecides(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setUp   func(t *testing.T, w *certWorld)
		wantErr bool
		check   func(t *testing.T, w *certWorld, res ctrl.Result)
	}{{
		name:  "cert-manager not served: says so and looks again, asks for nothing",
		setUp: func(_ *testing.T, w *certWorld) { w.certManager = false },
		check: func(t *testing.T, w *certWorld, res ctrl.Result) {
			wantCondition(t, w.condition(t), metav1.ConditionFalse, v1alpha1.ReasonCertManagerMissing)
			if res.RequeueAfter != pendingRecheck {
				t.Errorf("requeue after %s, want %s", res.RequeueAfter, pendingRecheck)
			}
		},
	}, {
		name:  "no certificate namespace: the issuer cannot be found, nothing to retry",
		setUp: func(_ *testing.T, w *certWorld) { w.namespace = "" },
		check: func(t *testing.T, w *certWorld, res ctrl.Result) {
			wantCondition(t, w.condition(t), metav1.ConditionFalse, v1alpha1.ReasonIssuerNotFound)
			if res.RequeueAfter != 0 {
				t.Errorf("requeue after %s", res.RequeueAfter)
			}
		},
	}, {
		name:  "no domain yet: waits for it, no Certificate",
		setUp: func(_ *testing.T, w *certWorld) { w.ci.Status.Domain = "" },
		check: func(t *testing.T, w *certWorld, _ ctrl.Result) {
			cond := w.condition(t)
			wantCondition(t, cond, metav1.ConditionFalse, v1alpha1.ReasonCertificateIssuing)
			if !strings.Contains(cond.Message, "domain") {
				t.Errorf("message %q does not say what it waits for", cond.Message)
			}
			if c := w.certificate(t); c != nil {
				t.Errorf("a Certificate before the domain: %v", c.Spec.DNSNames)
			}
		},
	}, {
		name:  "first certificate: ordered within the budget, recorded in the ledger, issuing",
		setUp: func(*testing.T, *certWorld) {},
		check: func(t *testing.T, w *certWorld, res ctrl.Result) {
			c := w.certificate(t)
			if c == nil || !slices.Equal(c.Spec.DNSNames, fakeWant) || c.Spec.IssuerRef.Name != "le" {
				t.Fatalf("Certificate %+v", c)
			}
			if owner, ok := certs.Owner(c); !ok || owner != w.key {
				t.Errorf("Certificate owner %v %v", owner, ok)
			}
			if o := w.orders(t); len(o) != 1 || o[0].Cluster != w.key.String() || o[0].Names != certs.NamesKey(fakeWant) {
				t.Errorf("ledger %+v", o)
			}
			wantCondition(t, w.condition(t), metav1.ConditionFalse, v1alpha1.ReasonCertificateIssuing)
			st := w.status(t).Certificate
			if st == nil || st.Name != certs.CertificateName(w.key) || !slices.Equal(st.DNSNames, fakeWant) || st.SerialNumber != "" {
				t.Errorf("status.certificate %+v", st)
			}
			if res.RequeueAfter != pendingRecheck {
				t.Errorf("requeue after %s, want %s", res.RequeueAfter, pendingRecheck)
			}
		},
	}, {
		name:  "the issuer is missing: the Certificate is written, the condition names the issuer",
		setUp: func(_ *testing.T, w *certWorld) { w.objs = nil },
		check: func(t *testing.T, w *certWorld, _ ctrl.Result) {
			wantCondition(t, w.condition(t), metav1.ConditionFalse, v1alpha1.ReasonIssuerNotFound)
			if w.certificate(t) == nil {
				t.Error("no Certificate")
			}
		},
	}, {
		name: "the issuer is not ready: says why",
		setUp: func(_ *testing.T, w *certWorld) {
			w.objs = []client.Object{&cmapi.Issuer{ObjectMeta: metav1.ObjectMeta{Namespace: fakeCertNS, Name: "le"},
				Status: cmapi.IssuerStatus{Conditions: []cmapi.IssuerCondition{{Type: cmapi.IssuerConditionReady,
					Status: cmmeta.ConditionFalse, Reason: "ErrRegisterACMEAccount", Message: "no account"}}}}}
		},
		check: func(t *testing.T, w *certWorld, _ ctrl.Result) {
			cond := w.condition(t)
			wantCondition(t, cond, metav1.ConditionFalse, v1alpha1.ReasonIssuerNotReady)
			if !strings.Contains(cond.Message, "no account") {
				t.Errorf("message %q", cond.Message)
			}
		},
	}, {
		name: "issued: Ready, the serial reported, looked at again when it expires, no new order",
		setUp: func(t *testing.T, w *certWorld) {
			w.objs = append(w.objs, w.granted(fakeWant), w.issued(t, fakeWant))
		},
		check: func(t *testing.T, w *certWorld, res ctrl.Result) {
			wantCondition(t, w.condition(t), metav1.ConditionTrue, v1alpha1.ReasonCertificateIssued)
			if st := w.status(t).Certificate; st == nil || st.SerialNumber == "" || !slices.Equal(st.DNSNames, fakeWant) {
				t.Errorf("status.certificate %+v", st)
			}
			// The key pair's NotAfter is a day away (certstest may round it to the second).
			if d := res.RequeueAfter - 24*time.Hour; d < -2*time.Second || d > 2*time.Second {
				t.Errorf("requeue after %s, want about 24h", res.RequeueAfter)
			}
			if o := w.orders(t); len(o) != 0 {
				t.Errorf("an unchanged Certificate spent the budget: %+v", o)
			}
		},
	}, {
		name: "a key pair for more names than the cluster's: refused, not reported",
		setUp: func(t *testing.T, w *certWorld) {
			w.objs = append(w.objs, w.granted(fakeWant), w.issued(t, append(slices.Clone(fakeWant), "*.victim.z.test")))
		},
		check: func(t *testing.T, w *certWorld, _ ctrl.Result) {
			cond := w.condition(t)
			wantCondition(t, cond, metav1.ConditionFalse, v1alpha1.ReasonCertificateUnexpectedNames)
			if strings.Contains(cond.Message, "victim") {
				t.Errorf("the message repeats the foreign name: %q", cond.Message)
			}
			if st := w.status(t).Certificate; st == nil || st.SerialNumber != "" {
				t.Errorf("status.certificate reports a key pair that is not the cluster's: %+v", st)
			}
		},
	}, {
		name: "the seed's budget is spent: queued until its turn, no Certificate",
		setUp: func(_ *testing.T, w *certWorld) {
			w.perWeek = 1
			w.objs = append(w.objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: fakeCertNS, Name: LedgerName},
				Data: map[string]string{ledgerKey: certs.FormatLedger([]certs.Order{{Cluster: "other/x", Names: "k",
					At: w.now.Add(-time.Hour)}}, w.now)}})
		},
		check: func(t *testing.T, w *certWorld, res ctrl.Result) {
			wantCondition(t, w.condition(t), metav1.ConditionFalse, v1alpha1.ReasonIssuanceQueued)
			if c := w.certificate(t); c != nil {
				t.Errorf("a queued cluster got a Certificate: %v", c.Spec.DNSNames)
			}
			if res.RequeueAfter <= 0 || res.RequeueAfter > queuedRecheck {
				t.Errorf("requeue after %s, want within (0, %s]", res.RequeueAfter, queuedRecheck)
			}
			if o := w.orders(t); len(o) != 1 {
				t.Errorf("ledger %+v", o)
			}
		},
	}, {
		name: "a hand edit of the Certificate is put back",
		setUp: func(_ *testing.T, w *certWorld) {
			c := w.granted(fakeWant)
			c.Spec.DNSNames = append(c.Spec.DNSNames, "*.victim.z.test")
			c.Spec.CommonName, c.Spec.IssuerRef.Name = "victim.z.test", "other"
			w.objs = append(w.objs, c)
		},
		check: func(t *testing.T, w *certWorld, _ ctrl.Result) {
			c := w.certificate(t)
			if !slices.Equal(c.Spec.DNSNames, fakeWant) || c.Spec.CommonName != "" || c.Spec.IssuerRef.Name != "le" {
				t.Errorf("hand edit kept: %+v", c.Spec)
			}
		},
	}, {
		name: "a Certificate of that name that is not Shardgate's: an error, left as it is",
		setUp: func(_ *testing.T, w *certWorld) {
			w.objs = append(w.objs, &cmapi.Certificate{ObjectMeta: metav1.ObjectMeta{Namespace: fakeCertNS,
				Name: certs.CertificateName(w.key)}, Spec: cmapi.CertificateSpec{SecretName: "mine", DNSNames: []string{"x.test"}}})
		},
		wantErr: true,
		check: func(t *testing.T, w *certWorld, _ ctrl.Result) {
			wantCondition(t, w.condition(t), metav1.ConditionFalse, v1alpha1.ReasonIssuanceFailed)
			if c := w.certificate(t); !slices.Equal(c.Spec.DNSNames, []string{"x.test"}) || c.Spec.SecretName != "mine" {
				t.Errorf("written over: %+v", c.Spec)
			}
		},
	}, {
		name: "TLS off: the Certificates go (the legacy one too), the condition and status.certificate with them",
		setUp: func(_ *testing.T, w *certWorld) {
			w.objs = append(w.objs, w.granted(fakeWant), w.legacy()) // rendered while TLS was on
			w.ci.Spec.TLS.Enabled = ptr.To(false)
			w.ci.Status.Certificate = &v1alpha1.CertificateStatus{Name: certs.CertificateName(w.key), DNSNames: fakeWant}
			w.ci.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionCertificateReady, Status: metav1.ConditionTrue,
				Reason: v1alpha1.ReasonCertificateIssued, LastTransitionTime: metav1.NewTime(w.now)}}
		},
		check: func(t *testing.T, w *certWorld, _ ctrl.Result) {
			if c := w.certificate(t); c != nil {
				t.Error("the Certificate stays with TLS off")
			}
			if w.exists(t, w.legacy()) {
				t.Error("the legacy Certificate stays with TLS off")
			}
			if st := w.status(t); st.Certificate != nil || w.condition(t) != nil {
				t.Errorf("status keeps the certificate: %+v", st)
			}
		},
	}, {
		name: "the cluster is gone: its Certificate goes (no owner reference reaches across namespaces)",
		setUp: func(_ *testing.T, w *certWorld) {
			w.gone = true
			w.objs = append(w.objs, w.granted(fakeWant))
		},
		check: func(t *testing.T, w *certWorld, _ ctrl.Result) {
			if c := w.certificate(t); c != nil {
				t.Error("the Certificate outlived its cluster")
			}
		},
	}, {
		name: "the cluster is being deleted: its Certificate goes",
		setUp: func(_ *testing.T, w *certWorld) {
			w.ci.Finalizers = []string{"test/hold"}
			w.ci.DeletionTimestamp = ptr.To(metav1.NewTime(w.now))
			w.objs = append(w.objs, w.granted(fakeWant))
		},
		check: func(t *testing.T, w *certWorld, _ ctrl.Result) {
			if c := w.certificate(t); c != nil {
				t.Error("the Certificate outlived its cluster's deletion")
			}
		},
	}, {
		name: "the new Certificate is served: the one from before the move goes",
		setUp: func(t *testing.T, w *certWorld) {
			w.objs = append(w.objs, w.granted(fakeWant), w.issued(t, fakeWant), w.legacy())
		},
		check: func(t *testing.T, w *certWorld, _ ctrl.Result) {
			wantCondition(t, w.condition(t), metav1.ConditionTrue, v1alpha1.ReasonCertificateIssued)
			if w.exists(t, w.legacy()) {
				t.Error("the legacy Certificate stays after the move")
			}
		},
	}, {
		name: "the new Certificate is not served yet: the one from before the move stays",
		setUp: func(_ *testing.T, w *certWorld) {
			w.objs = append(w.objs, w.granted(fakeWant), w.legacy())
		},
		check: func(t *testing.T, w *certWorld, _ ctrl.Result) {
			wantCondition(t, w.condition(t), metav1.ConditionFalse, v1alpha1.ReasonCertificateIssuing)
			if !w.exists(t, w.legacy()) {
				t.Error("the legacy Certificate went before the new one was served")
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			w := newCertWorld()
			tc.setUp(t, w)
			res, err := w.reconcile(t)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Reconcile: %v, want an error: %v", err, tc.wantErr)
			}
			tc.check(t, w, res)
		})
	}
}
