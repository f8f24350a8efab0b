package allocation

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/allocation"
)

func extenderSpec(srv *httptest.Server, timeout time.Duration) *v1alpha1.AllocationExtender {
	return &v1alpha1.AllocationExtender{URL: srv.URL,
		CABundle: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})),
		Timeout:  &metav1.Duration{Duration: timeout}}
}

// TestExtenderClient: the extender is sent the route and its candidates and its shard is used;
// an answer that is late, not 200, not JSON, a redirect, or from a server the CA bundle does not
// vouch for is an error (the fallback decides); a pass stops asking after its budget.
func TestExtenderClient(t *testing.T) {
	var got ExtenderRequest
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewDecoder(r.Body).Decode(&got)
		switch got.Route.Name {
		case "slow":
			<-r.Context().Done() // answers only once the client gave up
		case "fail":
			http.Error(w, "secret internals", http.StatusInternalServerError)
		case "garbage":
			_, _ = w.Write([]byte("<html>"))
		case "redirect":
			http.Redirect(w, r, "https://169.254.169.254/", http.StatusFound)
		default:
			_ = json.NewEncoder(w).Encode(ExtenderAnswer{Shard: "b"})
		}
	}))
	defer srv.Close()
	var e extenders
	// A timeout a busy machine's TLS handshake fits in: the slow answer waits it out whatever it is.
	ask, err := e.ask(context.Background(), "seed/c1", extenderSpec(srv, 2*time.Second), time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	cands := []allocation.ShardLoad{{Name: "a", Labels: map[string]string{"tier": "gold"}, Routes: 3, Capacity: 2,
		LoadKnown: true, Utilization: 40}, {Name: "b"}}
	route := func(name string) allocation.Route {
		return allocation.Route{Kind: "Ingress", Namespace: "shop", Name: name, Hosts: []string{"", "www.shop.example"},
			NamespaceLabels: map[string]string{"tier": "gold"}}
	}
	if shard, err := ask(route("web"), cands); err != nil || shard != "b" {
		t.Fatalf("answer: %q %v", shard, err)
	}
	if got.Cluster != "seed/c1" || got.Route.Namespace != "shop" || len(got.Route.Hosts) != 1 ||
		got.Route.NamespaceLabels["tier"] != "gold" || len(got.Candidates) != 2 || got.Candidates[0].Labels["tier"] != "gold" ||
		got.Candidates[0].ReadyRouters != 2 || got.Candidates[0].Utilization != 40 || !got.Candidates[0].LoadKnown {
		t.Errorf("request %+v", got)
	}
	for name, want := range map[string]string{"slow": "Timeout", "fail": "500", "garbage": "not JSON", "redirect": "302"} {
		if _, err := ask(route(name), cands); err == nil || !strings.Contains(err.Error(), want) ||
			strings.Contains(err.Error(), "secret internals") {
			t.Errorf("%s: %v, want an error with %q and nothing the extender said", name, err, want)
		}
	}
	// A CA bundle that does not vouch for the server.
	spec := extenderSpec(srv, time.Second)
	spec.CABundle = otherCA(t)
	if askOther, err := e.ask(context.Background(), "seed/c1", spec, time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	} else if _, err := askOther(route("web"), cands); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("untrusted server: %v", err)
	}
	// The pass' budget is spent: no request at all.
	late, _ := e.ask(context.Background(), "seed/c1", extenderSpec(srv, time.Second), time.Now().Add(-time.Second))
	got = ExtenderRequest{}
	if _, err := late(route("web"), cands); err == nil || got.Cluster != "" {
		t.Errorf("asked past the pass' budget: %v %+v", err, got)
	}
	if _, err := e.ask(context.Background(), "seed/c1", &v1alpha1.AllocationExtender{URL: srv.URL, CABundle: "no pem"},
		time.Now()); err == nil {
		t.Error("a CA bundle without a certificate accepted")
	}
}

func TestCustomStrategyCondition(t *testing.T) {
	scored := v1alpha1.AllocationSettings{Score: "1"}
	prev := []metav1.Condition{{Type: v1alpha1.ConditionCustomStrategyApplied, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonFellBack, Message: "earlier"}}
	tests := []struct {
		name   string
		a      v1alpha1.AllocationSettings
		f      allocation.Fallbacks
		conds  []metav1.Condition
		status metav1.ConditionStatus
		reason string
	}{
		{"all decided", scored, allocation.Fallbacks{Picks: 3}, nil, metav1.ConditionTrue, v1alpha1.ReasonApplied},
		{"one fell back", scored, allocation.Fallbacks{Picks: 3, Fell: 1, FirstProblem: "x"}, nil, metav1.ConditionFalse,
			v1alpha1.ReasonFellBack},
		{"no new route keeps the last verdict", scored, allocation.Fallbacks{}, prev, metav1.ConditionFalse, v1alpha1.ReasonFellBack},
		{"no new route yet", scored, allocation.Fallbacks{}, nil, metav1.ConditionUnknown, v1alpha1.ReasonNoNewRoutes},
	}
	for _, tt := range tests {
		c := customStrategyCondition(tt.a, &tt.f, tt.conds)
		if c == nil || c.Status != tt.status || c.Reason != tt.reason {
			t.Errorf("%s: %+v", tt.name, c)
		}
	}
	if c := customStrategyCondition(v1alpha1.AllocationSettings{}, &allocation.Fallbacks{Picks: 1}, prev); c != nil {
		t.Errorf("without a score or extender: %+v", c)
	}
}

// otherCA is a self-signed CA certificate of the test's own (PEM).
func otherCA(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "other"}, IsCA: true,
		BasicConstraintsValid: true, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}
