package admission

import (
	"context"
	"crypto/x509"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func rereview29Config(t *testing.T) (client.Client, func() *admissionregistrationv1.ValidatingWebhookConfiguration) {
	t.Helper()
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "sg"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "ingressprofiles.shardgate.io"}}}
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(vwc).Build()
	return c, func() *admissionregistrationv1.ValidatingWebhookConfiguration {
		got := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := c.Get(context.Background(), client.ObjectKey{Name: "sg"}, got); err != nil {
			t.Fatal(err)
		}
		return got
	}
}

func rereview29Trusted(t *testing.T, k *Keeper, vwc *admissionregistrationv1.ValidatingWebhookConfiguration, at time.Time) bool {
	t.Helper()
	served, err := k.GetCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(vwc.Webhooks[0].ClientConfig.CABundle) {
		return false
	}
	_, err = served.Leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "wh.sg.svc", CurrentTime: at})
	return err == nil
}

// TestReReview29RestartsEvictALiveReplicasCA (rereview29, Medium, operator at 3 a.m. / no attacker
// needed: node drains, OOM kills, a crash-looping replica): WithCA evicts by NotBefore, not by
// liveness. With 2 replicas, A runs for weeks while B is restarted (each start issues a new CA and
// adds it; dead CAs stay until expiry or the bound). After 15 B restarts the bundle holds A's CA
// and 15 dead B CAs; the 16th B restart drops A's CA - the only OTHER live one - as "the oldest".
// A re-adds it within Interval (1 min), dropping the oldest dead B CA, and the next B restart
// drops A again. Each time, reviews the Service routes to A fail TLS (failurePolicy Ignore: the
// profile is admitted unchecked; Fail: the write is refused). A crash-looping B does this on
// every restart.
func TestReReview29RestartsEvictALiveReplicasCA(t *testing.T) {
	ctx := context.Background()
	c, get := rereview29Config(t)
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	keeper := func(now *time.Time) *Keeper {
		return &Keeper{Client: c, Configuration: "sg", Hosts: []string{"wh.sg.svc"}, Log: logr.Discard(),
			Now: func() time.Time { return *now }}
	}
	clockA := t0
	a := keeper(&clockA)
	for i := 1; i <= 2*maxOwnCAs; i++ { // B (re)started 128 times, every 5 minutes, while A lives
		at := t0.Add(time.Duration(i) * 5 * time.Minute)
		clockA = at
		if err := a.Sync(ctx); err != nil { // A's check, every minute in life
			t.Fatal(err)
		}
		clockB := at.Add(time.Second)
		if err := keeper(&clockB).Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if !rereview29Trusted(t, a, get(), clockB) {
			t.Fatalf("after B's restart #%d, live replica A's CA is no longer in the caBundle", i)
		}
	}
	if n := strings.Count(string(get().Webhooks[0].ClientConfig.CABundle), "BEGIN CERTIFICATE"); n > 2+int(staleAfter/(5*time.Minute)) {
		t.Errorf("%d CAs kept: B's dead ones are not dropped once stale", n)
	}
}
