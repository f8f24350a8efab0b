package admission

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"strings"
	"testing"
	"time"
)

func TestPlan(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	hosts := []string{"wh.sg.svc", "127.0.0.1"}
	fresh, err := Issue(Bundle{}, Renewal{CA: true, Serving: true}, hosts, now)
	if err != nil {
		t.Fatal(err)
	}
	other, err := Issue(Bundle{}, Renewal{CA: true, Serving: true}, hosts, now)
	if err != nil {
		t.Fatal(err)
	}
	with := func(f func(*Bundle)) Bundle { b := fresh; f(&b); return b }
	tests := []struct {
		name        string
		b           Bundle
		hosts       []string
		at          time.Time
		ca, serving bool
		why         string
	}{
		{"fresh", fresh, hosts, now, false, false, ""},
		{"same names in another order and form", fresh, []string{"::ffff:127.0.0.1", "wh.sg.svc", "wh.sg.svc"}, now, false, false, ""},
		{"nothing issued yet", Bundle{}, hosts, now, true, true, "CA: missing"},
		{"CA key of another CA", with(func(b *Bundle) { b.CAKey = other.CAKey }), hosts, now, true, true, "its key"},
		{"CA not PEM", with(func(b *Bundle) { b.CACert = []byte("x") }), hosts, now, true, true, "CA: missing"},
		{"CA within 30 days of expiry", fresh, hosts, now.Add(caValidity - 29*24*time.Hour), true, true, "CA expires"},
		{"serving certificate missing", with(func(b *Bundle) { b.Cert, b.Key = nil, nil }), hosts, now, false, true, "serving"},
		{"serving key of another", with(func(b *Bundle) { b.Key = other.Key }), hosts, now, false, true, "serving"},
		{"serving certificate of another CA", with(func(b *Bundle) { b.Cert, b.Key = other.Cert, other.Key }), hosts, now,
			false, true, "unknown authority"},
		{"serving 31 days before expiry", fresh, hosts, now.Add(334 * 24 * time.Hour), false, false, ""},
		{"other names", fresh, []string{"wh.sg.svc"}, now, false, true, "is for [127.0.0.1 wh.sg.svc], not [wh.sg.svc]"},
	}
	for _, tt := range tests {
		r := Plan(tt.b, tt.hosts, tt.at)
		if r.CA != tt.ca || r.Serving != tt.serving || !strings.Contains(r.Why, tt.why) || (tt.why == "") != (r.Why == "") {
			t.Errorf("%s: %+v, want CA %v, serving %v, why %q", tt.name, r, tt.ca, tt.serving, tt.why)
		}
	}
}

// TestIssue: a renewed serving certificate keeps the CA (the caBundle stays), serves the hosts,
// and what Issue makes Plan leaves alone.
func TestIssue(t *testing.T) {
	now := time.Now()
	first, err := Issue(Bundle{}, Renewal{CA: true, Serving: true}, []string{"a.svc"}, now)
	if err != nil {
		t.Fatal(err)
	}
	renewed, err := Issue(first, Renewal{Serving: true}, []string{"b.svc", "10.0.0.1"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.CACert, renewed.CACert) || string(first.Cert) == string(renewed.Cert) {
		t.Fatal("a serving renewal changed the CA or kept the certificate")
	}
	if r := Plan(renewed, []string{"10.0.0.1", "b.svc"}, now); r != (Renewal{}) {
		t.Fatalf("a fresh bundle needs %+v", r)
	}
	pair, err := tls.X509KeyPair(renewed.Cert, renewed.Key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(pair.Certificate[0])
	if err := leaf.VerifyHostname("10.0.0.1"); err != nil || leaf.VerifyHostname("b.svc") != nil {
		t.Fatalf("names: %v", err)
	}
	if leaf.PublicKeyAlgorithm != x509.ECDSA || leaf.NotAfter.Sub(now) > servingValidity {
		t.Fatalf("key %v", leaf.PublicKeyAlgorithm)
	}
	if _, err := Issue(first, Renewal{Serving: true}, nil, now); err == nil {
		t.Fatal("issued a certificate for no host")
	}
}
