package admission

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Keeper keeps the webhook's certificate (the OPA Gatekeeper / cert-controller model, no
// cert-manager): every replica ensures the Secret holds a CA and a serving certificate for Hosts
// that is not about to expire (the first to write wins, the others read theirs), serves the
// certificate the Secret holds, and writes the CA into the caBundle of every webhook of the
// configuration. It runs on every replica, leader or not: each serves admission requests.
type Keeper struct {
	// Client reads and writes the Secret and the configuration directly: the manager's cache
	// holds no such Secret, and a watch of Secrets would need a list of them.
	Client client.Client
	Secret types.NamespacedName
	// Configuration is the ValidatingWebhookConfiguration whose caBundles it fills; it is never
	// created or deleted here (the chart does).
	Configuration string
	Hosts         []string
	// Interval between checks (default a minute): how soon a replica serves a certificate another
	// replica renewed.
	Interval time.Duration
	Log      logr.Logger
	Now      func() time.Time

	serving   atomic.Pointer[tls.Certificate]
	servedPEM []byte
}

// GetCertificate is the serving tls.Config's: the certificate last read from the Secret.
func (k *Keeper) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := k.serving.Load(); c != nil {
		return c, nil
	}
	return nil, errors.New("the admission webhook's certificate is not loaded yet")
}

// NeedLeaderElection: every replica serves the webhook.
func (k *Keeper) NeedLeaderElection() bool { return false }

// Start checks at once, then every Interval (every 5 s while a check fails) until ctx ends.
func (k *Keeper) Start(ctx context.Context) error {
	interval := k.Interval
	if interval <= 0 {
		interval = time.Minute
	}
	for {
		wait := interval
		if err := k.Sync(ctx); err != nil {
			k.Log.Error(err, "admission webhook certificate", "secret", k.Secret, "configuration", k.Configuration)
			wait = min(interval, 5*time.Second)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// Sync ensures the Secret, serves what it holds, and puts its CA in the configuration.
func (k *Keeper) Sync(ctx context.Context) error {
	b, err := k.ensureSecret(ctx)
	if err != nil {
		return err
	}
	if !slices.Equal(b.Cert, k.servedPEM) {
		pair, err := tls.X509KeyPair(b.Cert, b.Key)
		if err != nil {
			return fmt.Errorf("secret %s: %w", k.Secret, err)
		}
		k.serving.Store(&pair)
		k.servedPEM = b.Cert
		k.Log.Info("serving the admission webhook certificate", "secret", k.Secret, "notAfter", pair.Leaf.NotAfter)
	}
	return k.injectCA(ctx, b.CACert)
}

func (k *Keeper) now() time.Time {
	if k.Now != nil {
		return k.Now()
	}
	return time.Now()
}

// ensureSecret returns the Secret's bundle, created or renewed first if Plan says so. Another
// replica's write wins a race (AlreadyExists, Conflict): its bundle is read and used.
func (k *Keeper) ensureSecret(ctx context.Context) (Bundle, error) {
	s := &corev1.Secret{}
	err := k.Client.Get(ctx, k.Secret, s)
	if apierrors.IsNotFound(err) {
		b, created, cerr := k.createSecret(ctx)
		if cerr != nil || created {
			return b, cerr
		}
		err = k.Client.Get(ctx, k.Secret, s) // another replica's
	}
	if err != nil {
		return Bundle{}, fmt.Errorf("reading secret %s: %w", k.Secret, err)
	}
	b := BundleFrom(s.Data)
	r := Plan(b, k.Hosts, k.now())
	if !r.CA && !r.Serving {
		return b, nil
	}
	renewed, err := Issue(b, r, k.Hosts, k.now())
	if err != nil {
		return Bundle{}, err
	}
	s.Data = renewed.Data() // resourceVersion kept: a replica that renewed first wins
	if err := k.Client.Update(ctx, s); err != nil {
		if apierrors.IsConflict(err) {
			return Bundle{}, fmt.Errorf("secret %s was renewed by another replica meanwhile: read again next", k.Secret)
		}
		return Bundle{}, fmt.Errorf("renewing secret %s: %w", k.Secret, err)
	}
	k.Log.Info("renewed the admission webhook certificate", "secret", k.Secret, "why", r.Why, "newCA", r.CA)
	return renewed, nil
}

// createSecret creates the Secret with a new bundle; false (and no error) when another replica
// created it first.
func (k *Keeper) createSecret(ctx context.Context) (Bundle, bool, error) {
	b, err := Issue(Bundle{}, Renewal{CA: true, Serving: true}, k.Hosts, k.now())
	if err != nil {
		return Bundle{}, false, err
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: k.Secret.Namespace, Name: k.Secret.Name,
		Labels: map[string]string{"app.kubernetes.io/managed-by": "shardgate"}},
		Type: corev1.SecretTypeTLS, Data: b.Data()}
	switch err := k.Client.Create(ctx, s); {
	case err == nil:
		k.Log.Info("created the admission webhook's CA and certificate", "secret", k.Secret)
		return b, true, nil
	case apierrors.IsAlreadyExists(err):
		return Bundle{}, false, nil
	default:
		return Bundle{}, false, fmt.Errorf("creating secret %s: %w", k.Secret, err)
	}
}

// injectCA writes ca into the caBundle of each webhook of the configuration that lacks it,
// changing nothing else.
func (k *Keeper) injectCA(ctx context.Context, ca []byte) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := k.Client.Get(ctx, client.ObjectKey{Name: k.Configuration}, c); err != nil {
			return fmt.Errorf("reading ValidatingWebhookConfiguration %s: %w", k.Configuration, err)
		}
		changed := false
		for i := range c.Webhooks {
			if !SameCA(c.Webhooks[i].ClientConfig.CABundle, ca) {
				c.Webhooks[i].ClientConfig.CABundle = ca
				changed = true
			}
		}
		if !changed {
			return nil
		}
		if err := k.Client.Update(ctx, c); err != nil {
			return err
		}
		k.Log.Info("wrote the CA into the webhooks' caBundle", "configuration", k.Configuration, "webhooks", len(c.Webhooks))
		return nil
	})
}
