package admission

import (
	"bytes"
	"context"
	"crypto/x509"
	"testing"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestKeeper: each replica serves a certificate of its own and adds its CA to every webhook's
// caBundle beside the other replicas' (nothing else of the configuration changes); a change of
// names renews the serving certificate under the same CA; no Secret is written.
func TestKeeper(t *testing.T) {
	ctx := context.Background()
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "sg"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "a.shardgate.io"}, {Name: "b.shardgate.io",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{CABundle: []byte("old")}}}}
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(vwc).Build()
	replica := func() *Keeper {
		return &Keeper{Client: c, Configuration: "sg", Hosts: []string{"wh.sg.svc"}, Log: logr.Discard()}
	}
	a, b := replica(), replica()
	if _, err := a.GetCertificate(nil); err == nil {
		t.Fatal("a certificate before the first sync")
	}
	for _, k := range []*Keeper{a, b, a, b} { // again: nothing to change, nothing undone
		if err := k.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	got := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	trusts := func(k *Keeper) bool {
		t.Helper()
		if err := c.Get(ctx, client.ObjectKey{Name: "sg"}, got); err != nil {
			t.Fatal(err)
		}
		served, err := k.GetCertificate(nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range got.Webhooks {
			roots := x509.NewCertPool()
			if !roots.AppendCertsFromPEM(w.ClientConfig.CABundle) {
				return false
			}
			if _, err := served.Leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "wh.sg.svc"}); err != nil {
				return false
			}
		}
		return true
	}
	if !trusts(a) || !trusts(b) {
		t.Fatal("the caBundle does not trust both replicas' certificates")
	}
	if n := bytes.Count(got.Webhooks[1].ClientConfig.CABundle, []byte("BEGIN CERTIFICATE")); n != 2 {
		t.Errorf("caBundle holds %d CAs, want the two replicas'", n)
	}
	if got.Webhooks[0].Name != "a.shardgate.io" || len(got.Webhooks) != 2 {
		t.Errorf("webhooks changed: %+v", got.Webhooks)
	}
	if secrets := (&corev1.SecretList{}); c.List(ctx, secrets) != nil || len(secrets.Items) != 0 {
		t.Errorf("a Secret was written: %v", secrets.Items)
	}

	// New names: a new serving certificate under the same CA, still trusted.
	before, _ := a.GetCertificate(nil)
	ca := a.bundle.CACert
	a.Hosts = []string{"wh.sg.svc", "wh.sg.svc.cluster.local"}
	if err := a.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	after, _ := a.GetCertificate(nil)
	if string(a.bundle.CACert) != string(ca) || after.Leaf.Equal(before.Leaf) ||
		after.Leaf.VerifyHostname("wh.sg.svc.cluster.local") != nil || !trusts(a) {
		t.Fatal("names changed: not renewed under the same, trusted CA")
	}
}
