package admission

import (
	"context"
	"crypto/x509"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// TestKeeper: the keeper creates the Secret, serves it, fills every webhook's caBundle (nothing
// else); a replica that loses the create race uses the winner's Secret; a change of names renews
// the serving certificate under the same CA.
func TestKeeper(t *testing.T) {
	ctx := context.Background()
	key := types.NamespacedName{Namespace: "sg", Name: "webhook-tls"}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "sg"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "a.shardgate.io"}, {Name: "b.shardgate.io",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{CABundle: []byte("old")}}}}
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(vwc).Build()
	k := &Keeper{Client: c, Secret: key, Configuration: "sg", Hosts: []string{"wh.sg.svc"}, Log: logr.Discard()}
	if _, err := k.GetCertificate(nil); err == nil {
		t.Fatal("a certificate before the first sync")
	}
	if err := k.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	s := &corev1.Secret{}
	if err := c.Get(ctx, key, s); err != nil || s.Type != corev1.SecretTypeTLS {
		t.Fatalf("Secret: %v %s", err, s.Type)
	}
	served, err := k.GetCertificate(nil)
	if err != nil || string(s.Data[KeyCert]) == "" {
		t.Fatal(err)
	}
	if err := served.Leaf.VerifyHostname("wh.sg.svc"); err != nil {
		t.Fatal(err)
	}
	got := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := c.Get(ctx, client.ObjectKey{Name: "sg"}, got); err != nil {
		t.Fatal(err)
	}
	for _, w := range got.Webhooks {
		if !SameCA(w.ClientConfig.CABundle, s.Data[KeyCACert]) {
			t.Errorf("%s: caBundle %q", w.Name, w.ClientConfig.CABundle)
		}
	}
	if got.Webhooks[0].Name != "a.shardgate.io" || len(got.Webhooks) != 2 {
		t.Errorf("webhooks changed: %+v", got.Webhooks)
	}

	// Another replica: its Get misses the Secret the first created (a race), its create fails.
	misses := 1
	raced := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(s.DeepCopy(), got.DeepCopy()).
		WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey,
			o client.Object, opts ...client.GetOption) error {
			if _, ok := o.(*corev1.Secret); ok && misses > 0 {
				misses--
				return apierrors.NewNotFound(corev1.Resource("secrets"), k.Name)
			}
			return c.Get(ctx, k, o, opts...)
		}}).Build()
	other := &Keeper{Client: raced, Secret: key, Configuration: "sg", Hosts: []string{"wh.sg.svc"}, Log: logr.Discard()}
	if err := other.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	theirs, _ := other.GetCertificate(nil)
	if !theirs.Leaf.Equal(served.Leaf) {
		t.Fatal("the replica that lost the race serves a certificate of its own")
	}

	// New names: a new serving certificate, the same CA and caBundle.
	k.Hosts = []string{"wh.sg.svc", "wh.sg.svc.cluster.local"}
	if err := k.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	renewed := &corev1.Secret{}
	if err := c.Get(ctx, key, renewed); err != nil {
		t.Fatal(err)
	}
	now, _ := k.GetCertificate(nil)
	if !SameCA(renewed.Data[KeyCACert], s.Data[KeyCACert]) || now.Leaf.Equal(served.Leaf) ||
		now.Leaf.VerifyHostname("wh.sg.svc.cluster.local") != nil {
		t.Fatal("names changed: not renewed under the same CA")
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(got.Webhooks[0].ClientConfig.CABundle)
	if _, err := now.Leaf.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: time.Now()}); err != nil {
		t.Fatalf("the renewed certificate is not trusted by the caBundle: %v", err)
	}
}
