package certs

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	acmev1 "github.com/cert-manager/cert-manager/pkg/apis/acme/v1"
	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/certs/certstest"
)

func TestDNSNames(t *testing.T) {
	got := DNSNames("c1.z", []v1alpha1.ShardSpec{{Name: "default"}, {Name: "edge"}, {Name: "internal"}})
	want := []string{"*.c1.z", "*.edge.c1.z", "*.internal.c1.z", "c1.z"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got := DNSNames("c1.z", nil); !slices.Equal(got, []string{"*.c1.z", "c1.z"}) {
		t.Fatalf("no shards: %v", got)
	}
}

// TestCertificateName: one namespace holds every cluster's Certificate, so the name keeps
// clusters of different namespaces apart ("a-b"/"c" and "a"/"b-c" must not meet).
func TestCertificateName(t *testing.T) {
	if n := CertificateName(types.NamespacedName{Namespace: "ns", Name: "c1"}); n != "ns.c1-tls" {
		t.Fatal(n)
	}
	if a, b := CertificateName(types.NamespacedName{Namespace: "a-b", Name: "c"}), CertificateName(types.NamespacedName{Namespace: "a", Name: "b-c"}); a == b {
		t.Fatalf("two clusters share %q", a)
	}
	long := strings.Repeat("a", 200)
	a, b := CertificateName(types.NamespacedName{Namespace: "ns", Name: long}), CertificateName(types.NamespacedName{Namespace: "ns", Name: long + "b"})
	if len(a) > 63 || len(b) > 63 || a == b || !strings.HasSuffix(a, "-tls") {
		t.Fatalf("%q %q", a, b)
	}
	if n := CertificateName(types.NamespacedName{Namespace: strings.Repeat("n", 50), Name: "c"}); len(n) > 63 || strings.Contains(n, ".-") {
		t.Fatalf("%q", n)
	}
	if n := LegacyCertificateName("c1"); n != "c1-tls" {
		t.Fatal(n)
	}
}

func TestCertificate(t *testing.T) {
	ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: "ns", UID: "u1"},
		Spec: v1alpha1.ClusterIngressSpec{TLS: v1alpha1.ResolveTLS(v1alpha1.TLSSettings{IssuerRef: &v1alpha1.IssuerReference{Name: "le"}})}}
	c := Certificate(ci, "shardgate", []string{"*.c1.z", "c1.z"})
	if c.Namespace != "shardgate" || c.Spec.SecretName != "ns.c1-tls" || c.Spec.IssuerRef.Kind != "Issuer" || c.Spec.IssuerRef.Group != "cert-manager.io" ||
		len(c.OwnerReferences) != 0 || c.Spec.PrivateKey.RotationPolicy != cmapi.RotationPolicyAlways {
		t.Fatalf("%+v", c)
	}
	if owner, ok := Owner(c); !ok || owner != (types.NamespacedName{Namespace: "ns", Name: "c1"}) || !slices.Equal(Granted(c), []string{"*.c1.z", "c1.z"}) {
		t.Fatalf("owner %v %v, granted %v", owner, ok, Granted(c))
	}
}

// TestDrifted: any difference in the spec is drift (a name, an issuer, a Secret, a field
// Shardgate never sets), and so are Shardgate's labels and annotations; others' metadata is not.
func TestDrifted(t *testing.T) {
	ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: "ns"},
		Spec: v1alpha1.ClusterIngressSpec{TLS: v1alpha1.ResolveTLS(v1alpha1.TLSSettings{IssuerRef: &v1alpha1.IssuerReference{Name: "le"}})}}
	desired := Certificate(ci, "shardgate", []string{"*.c1.z", "c1.z"})
	for name, edit := range map[string]func(c *cmapi.Certificate){
		"a name added":         func(c *cmapi.Certificate) { c.Spec.DNSNames = append(c.Spec.DNSNames, "*.victim.z") },
		"a common name":        func(c *cmapi.Certificate) { c.Spec.CommonName = "victim.z" },
		"an IP address":        func(c *cmapi.Certificate) { c.Spec.IPAddresses = []string{"10.0.0.1"} },
		"another issuer":       func(c *cmapi.Certificate) { c.Spec.IssuerRef.Name = "other" },
		"another Secret":       func(c *cmapi.Certificate) { c.Spec.SecretName = "stolen" },
		"the owner annotation": func(c *cmapi.Certificate) { c.Annotations[ClusterIngressAnnotation] = "other/c9" },
		"the granted names":    func(c *cmapi.Certificate) { c.Annotations[NamesAnnotation] = "*.victim.z" },
	} {
		live := desired.DeepCopy()
		edit(live)
		if !Drifted(live, desired) {
			t.Errorf("%s is not drift", name)
		}
	}
	live := desired.DeepCopy()
	live.Annotations["cert-manager.io/issue-temporary-certificate"] = "true"
	live.Labels["team"] = "x"
	if Drifted(live, desired) {
		t.Error("metadata of others counted as drift")
	}
}

func issue(t *testing.T, names []string, notBefore, notAfter time.Time) map[string][]byte {
	return certstest.TLSData(t, 0xabc, names, notBefore, notAfter)
}

func TestParseKeyPair(t *testing.T) {
	now := time.Now()
	good := issue(t, []string{"c1.z", "*.c1.z"}, now.Add(-time.Hour), now.Add(time.Hour))
	kp, err := ParseKeyPair(good)
	if err != nil || kp.Serial() != "abc" || !kp.ValidAt(now) || kp.ValidAt(now.Add(2*time.Hour)) {
		t.Fatalf("%v %v", kp, err)
	}
	if u := kp.Uncovered([]string{"c1.z", "*.c1.z", "*.edge.c1.z", "x.c1.z"}); !slices.Equal(u, []string{"*.edge.c1.z"}) {
		t.Fatalf("uncovered %v", u)
	}
	other := issue(t, []string{"c1.z"}, now, now.Add(time.Hour))
	mixed := map[string][]byte{corev1.TLSCertKey: good[corev1.TLSCertKey], corev1.TLSPrivateKeyKey: other[corev1.TLSPrivateKeyKey]}
	for name, data := range map[string]map[string][]byte{
		"empty": {}, "key of another certificate": mixed,
		"garbage": {corev1.TLSCertKey: []byte("SECRET-MARKER"), corev1.TLSPrivateKeyKey: []byte("SECRET-MARKER")},
	} {
		_, err := ParseKeyPair(data)
		if err == nil || strings.Contains(err.Error(), "SECRET-MARKER") || strings.Contains(err.Error(), "BEGIN") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestDecide(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	names := []string{"*.c1.z", "*.edge.c1.z", "c1.z"}
	pair := func(names []string, from, to time.Time) *KeyPair {
		kp, err := ParseKeyPair(issue(t, names, from, to))
		if err != nil {
			t.Fatal(err)
		}
		return kp
	}
	valid := pair(names, now.Add(-time.Hour), now.Add(90*24*time.Hour))
	expired := pair(names, now.Add(-48*time.Hour), now.Add(-time.Hour))
	partial := pair([]string{"*.c1.z", "c1.z"}, now.Add(-time.Hour), now.Add(time.Hour))
	foreign := pair(append(slices.Clone(names), "*.victim.z"), now.Add(-time.Hour), now.Add(90*24*time.Hour))
	cert := func(ready bool, issuing *cmapi.CertificateCondition) *cmapi.Certificate {
		c := &cmapi.Certificate{}
		st := cmmeta.ConditionFalse
		if ready {
			st = cmmeta.ConditionTrue
		}
		c.Status.Conditions = append(c.Status.Conditions, cmapi.CertificateCondition{Type: cmapi.CertificateConditionReady, Status: st})
		if issuing != nil {
			c.Status.Conditions = append(c.Status.Conditions, *issuing)
		}
		return c
	}
	challenge := func(name string, state acmev1.State, presented bool, reason string) acmev1.Challenge {
		ch := acmev1.Challenge{}
		ch.Spec.DNSName, ch.Status.State, ch.Status.Presented, ch.Status.Reason = name, state, presented, reason
		return ch
	}
	pendingOrder := &acmev1.Order{Status: acmev1.OrderStatus{State: acmev1.Pending}}
	for _, tt := range []struct {
		name   string
		o      Observed
		status metav1.ConditionStatus
		reason string
		says   []string
	}{
		{"issued", Observed{IssuerFound: true, Certificate: cert(true, nil), KeyPair: valid},
			metav1.ConditionTrue, v1alpha1.ReasonCertificateIssued, []string{"valid until 2027-02-20T12:00:00Z"}},
		{"no issuer", Observed{IssuerFound: false, KeyPair: valid},
			metav1.ConditionFalse, v1alpha1.ReasonIssuerNotFound, []string{"does not exist", "keep serving"}},
		{"issuer not ready", Observed{IssuerFound: true, Certificate: cert(false, nil),
			IssuerReady: &cmapi.IssuerCondition{Status: cmmeta.ConditionFalse, Reason: "ErrRegisterACMEAccount", Message: "connection refused"}},
			metav1.ConditionFalse, v1alpha1.ReasonIssuerNotReady, []string{"ErrRegisterACMEAccount: connection refused"}},
		{"first issuance running", Observed{IssuerFound: true, Certificate: cert(false, nil), Order: pendingOrder,
			Challenges: []acmev1.Challenge{challenge("c1.z", acmev1.Pending, true, "Waiting for DNS-01 challenge propagation"), challenge("c1.z", acmev1.Valid, true, "")}},
			metav1.ConditionFalse, v1alpha1.ReasonCertificateIssuing, []string{"ACME order pending, 1 of 2 challenges pending"}},
		{"challenge cannot be presented (wrong TSIG key)", Observed{IssuerFound: true, Certificate: cert(true, nil), KeyPair: valid, Order: pendingOrder,
			Challenges: []acmev1.Challenge{challenge("c1.z", acmev1.Pending, false, "error presenting challenge: DNS update failed: server replied: NOTAUTH")}},
			metav1.ConditionFalse, v1alpha1.ReasonChallengeFailed, []string{"c1.z", "NOTAUTH", "keep serving the certificate valid until 2027-02-20"}},
		{"challenge invalid", Observed{IssuerFound: true, Certificate: cert(false, nil), Order: pendingOrder,
			Challenges: []acmev1.Challenge{challenge("c1.z", acmev1.Invalid, true, "no TXT record found")}},
			metav1.ConditionFalse, v1alpha1.ReasonChallengeFailed, []string{"no TXT record found"}},
		{"rate limited order", Observed{IssuerFound: true, Certificate: cert(false, nil),
			Order: &acmev1.Order{Status: acmev1.OrderStatus{State: acmev1.Errored, Reason: "429 urn:ietf:params:acme:error:rateLimited: too many certificates"}}},
			metav1.ConditionFalse, v1alpha1.ReasonRateLimited, []string{"too many certificates"}},
		{"errored order", Observed{IssuerFound: true, Certificate: cert(false, nil),
			Order: &acmev1.Order{Status: acmev1.OrderStatus{State: acmev1.Errored, Reason: "finalize failed"}}},
			metav1.ConditionFalse, v1alpha1.ReasonIssuanceFailed, []string{"ACME order errored: finalize failed"}},
		{"request denied", Observed{IssuerFound: true, Certificate: cert(false, nil), Request: &cmapi.CertificateRequest{Status: cmapi.CertificateRequestStatus{
			Conditions: []cmapi.CertificateRequestCondition{{Type: cmapi.CertificateRequestConditionDenied, Status: cmmeta.ConditionTrue, Reason: "Denied", Message: "policy"}}}}},
			metav1.ConditionFalse, v1alpha1.ReasonIssuanceFailed, []string{"Denied: policy"}},
		{"last issuance failed", Observed{IssuerFound: true, KeyPair: valid,
			Certificate: cert(true, &cmapi.CertificateCondition{Type: cmapi.CertificateConditionIssuing, Status: cmmeta.ConditionFalse, Reason: "Failed", Message: "will be retried"})},
			metav1.ConditionFalse, v1alpha1.ReasonIssuanceFailed, []string{"will be retried", "keep serving"}},
		{"expired", Observed{IssuerFound: true, Certificate: cert(true, nil), KeyPair: expired},
			metav1.ConditionFalse, v1alpha1.ReasonCertificateExpired, []string{"expired at"}},
		{"a shard added: reissue pending", Observed{IssuerFound: true, Certificate: cert(true, nil), KeyPair: partial, Names: names},
			metav1.ConditionFalse, v1alpha1.ReasonCertificateMismatched, []string{"*.edge.c1.z"}},
		{"unusable Secret", Observed{IssuerFound: true, Certificate: cert(true, nil), KeyPairErr: errBadKeyPair},
			metav1.ConditionFalse, v1alpha1.ReasonCertificateInvalid, []string{"do not parse"}},
		{"Ready but no Secret yet", Observed{IssuerFound: true, Certificate: cert(true, nil)},
			metav1.ConditionFalse, v1alpha1.ReasonCertificateIssuing, nil},
		{"a key pair for other clusters' names too is refused", Observed{IssuerFound: true, Certificate: cert(true, nil), KeyPair: foreign},
			metav1.ConditionFalse, v1alpha1.ReasonCertificateUnexpectedNames, []string{"1 name(s)", "not handed to the routers"}},
		{"first certificate queued behind the budget", Observed{IssuerFound: true, Queued: &Queued{At: now.Add(36 * time.Hour), PerWeek: 20}},
			metav1.ConditionFalse, v1alpha1.ReasonIssuanceQueued, []string{"first certificate", "20 new orders a week", "expected at 2026-11-24T00:00:00Z"}},
		{"new names queued: the old certificate keeps serving", Observed{IssuerFound: true, Certificate: cert(true, nil), KeyPair: valid,
			Queued: &Queued{At: now.Add(time.Hour), PerWeek: 20}},
			metav1.ConditionFalse, v1alpha1.ReasonIssuanceQueued, []string{"new names", "expected at 2026-11-22T13:00:00Z", "keep serving"}},
		{"issued, shards past 100 names left out", Observed{IssuerFound: true, Certificate: cert(true, nil), KeyPair: valid, LeftOut: []string{"a-t", "b-t"}},
			metav1.ConditionTrue, v1alpha1.ReasonNamesLeftOut, []string{"at most 100 names", "a-t, b-t"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.Now = now
			if tt.o.Names == nil {
				tt.o.Names = names
			}
			got := Decide(tt.o)
			if got.Status != tt.status || got.Reason != tt.reason {
				t.Fatalf("got %s/%s (%s), want %s/%s", got.Status, got.Reason, got.Message, tt.status, tt.reason)
			}
			for _, s := range tt.says {
				if !strings.Contains(got.Message, s) {
					t.Errorf("message %q lacks %q", got.Message, s)
				}
			}
		})
	}
}

// TestNamesAtMost100: a certificate never asks for more than 100 names (an ACME server refuses
// the order, and the cluster's renewal with it); the shards past the limit are left out in
// order (profile shards first, then claims in status order) and named.
func TestNamesAtMost100(t *testing.T) {
	var shards []v1alpha1.ShardSpec
	shards = append(shards, v1alpha1.ShardSpec{Name: "default"}, v1alpha1.ShardSpec{Name: "edge"})
	for i := range 110 {
		shards = append(shards, v1alpha1.ShardSpec{Name: fmt.Sprintf("claim%03d-team", i), Claim: fmt.Sprintf("team/claim%03d", i)})
	}
	got, left := Names("c1.z", shards)
	if len(got) != MaxNames || !slices.Contains(got, "c1.z") || !slices.Contains(got, "*.c1.z") || !slices.Contains(got, "*.edge.c1.z") {
		t.Fatalf("%d names: %v", len(got), got)
	}
	// 2 cluster names + edge + 97 claims fit: claims 97..109 are left out.
	if len(left) != 13 || left[0] != "claim097-team" || left[12] != "claim109-team" || slices.Contains(got, "*.claim097-team.c1.z") {
		t.Fatalf("left out %v", left)
	}
	if again, left2 := Names("c1.z", shards); !slices.Equal(again, got) || !slices.Equal(left2, left) {
		t.Fatal("not deterministic")
	}
	if !slices.Equal(DNSNames("c1.z", shards), got) {
		t.Fatal("DNSNames differs from Names")
	}
}

// TestBeyond: a key pair must name nothing but the cluster's names.
func TestBeyond(t *testing.T) {
	now := time.Now()
	names := []string{"*.c1.z", "c1.z"}
	kp, err := ParseKeyPair(issue(t, []string{"c1.z", "*.c1.z"}, now.Add(-time.Hour), now.Add(time.Hour)))
	if err != nil || len(kp.Beyond(names)) != 0 {
		t.Fatalf("%v %v", kp.Beyond(names), err)
	}
	kp, _ = ParseKeyPair(issue(t, []string{"c1.z", "*.c1.z", "*.victim.z"}, now.Add(-time.Hour), now.Add(time.Hour)))
	if b := kp.Beyond(names); !slices.Equal(b, []string{"*.victim.z"}) {
		t.Fatalf("beyond %v", b)
	}
	kp, _ = ParseKeyPair(issue(t, []string{"c1.z"}, now.Add(-time.Hour), now.Add(time.Hour)))
	if b := kp.Beyond(names); len(b) != 0 {
		t.Fatalf("a subset is not beyond: %v", b)
	}
}
