package admission

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Keeper keeps the webhook's certificate. Each replica issues a CA and a serving certificate of
// its own, in memory only, and adds its CA to the caBundle of every webhook of the configuration
// beside the other replicas' (WithCA). No private key is ever written anywhere: a Secret holding
// a shared one would sit in a namespace whose Secret writers (S, where kubeconfig Secrets are
// read, the chart's default) could swap in their own CA and answer the API server's reviews.
// What the API server trusts is the configuration, which only cluster administrators and this
// controller (by its name) may update. It runs on every replica, leader or not: each serves
// admission requests.
type Keeper struct {
	// Client reads and updates the configuration directly (the manager's cache holds none).
	Client client.Client
	// Configuration is the ValidatingWebhookConfiguration whose caBundles it fills; it is never
	// created or deleted here (the chart does).
	Configuration string
	Hosts         []string
	// Interval between checks (default a minute): how soon a CA another replica's bound pruned,
	// or an administrator removed, is trusted again.
	Interval time.Duration
	Log      logr.Logger
	Now      func() time.Time

	bundle  Bundle // this replica's CA and serving certificate, never written out
	serving atomic.Pointer[tls.Certificate]
}

// GetCertificate is the serving tls.Config's: this replica's certificate.
func (k *Keeper) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := k.serving.Load(); c != nil {
		return c, nil
	}
	return nil, errors.New("the admission webhook's certificate is not issued yet")
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
			k.Log.Error(err, "admission webhook certificate", "configuration", k.Configuration)
			wait = min(interval, 5*time.Second)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// Sync issues what Plan says this replica's bundle needs, serves it, and makes sure the
// configuration trusts its CA.
func (k *Keeper) Sync(ctx context.Context) error {
	now := k.now()
	if r := Plan(k.bundle, k.Hosts, now); r.CA || r.Serving {
		b, err := Issue(k.bundle, r, k.Hosts, now)
		if err != nil {
			return err
		}
		pair, err := tls.X509KeyPair(b.Cert, b.Key)
		if err != nil {
			return err
		}
		k.bundle = b
		k.serving.Store(&pair)
		k.Log.Info("issued the admission webhook's certificate", "why", r.Why, "newCA", r.CA,
			"notAfter", pair.Leaf.NotAfter)
	}
	return k.trustCA(ctx, k.bundle.CACert, now)
}

func (k *Keeper) now() time.Time {
	if k.Now != nil {
		return k.Now()
	}
	return time.Now()
}

// trustCA adds ca to the caBundle of each webhook of the configuration and renews its entry in
// SeenAnnotation (WithCA), changing nothing else.
func (k *Keeper) trustCA(ctx context.Context, ca []byte, now time.Time) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := k.Client.Get(ctx, client.ObjectKey{Name: k.Configuration}, c); err != nil {
			return fmt.Errorf("reading ValidatingWebhookConfiguration %s: %w", k.Configuration, err)
		}
		before := readSeen(c.Annotations[SeenAnnotation])
		changed, seen := false, before
		for i := range c.Webhooks {
			// Each webhook's bundle against the entries as they were: one replica's view of which
			// CAs are alive, the same for every webhook.
			b, s, ch := WithCA(c.Webhooks[i].ClientConfig.CABundle, ca, before, now)
			if ch {
				c.Webhooks[i].ClientConfig.CABundle, changed = b, true
			}
			seen = s
		}
		if v := writeSeen(seen); v != c.Annotations[SeenAnnotation] {
			metav1.SetMetaDataAnnotation(&c.ObjectMeta, SeenAnnotation, v)
			changed = true
		}
		if !changed {
			return nil
		}
		if err := k.Client.Update(ctx, c); err != nil {
			return err
		}
		k.Log.V(1).Info("renewed this replica's CA in the webhooks' caBundle", "configuration", k.Configuration,
			"webhooks", len(c.Webhooks), "cas", len(seen))
		return nil
	})
}

// readSeen parses SeenAnnotation; what does not parse counts as absent (its CAs then look like
// someone else's, and are left alone).
func readSeen(v string) map[string]time.Time {
	raw := map[string]string{}
	if v == "" || json.Unmarshal([]byte(v), &raw) != nil {
		return nil
	}
	seen := make(map[string]time.Time, len(raw))
	for fp, at := range raw {
		if t, err := time.Parse(time.RFC3339, at); err == nil {
			seen[fp] = t
		}
	}
	return seen
}

func writeSeen(seen map[string]time.Time) string {
	raw := make(map[string]string, len(seen))
	for fp, at := range seen {
		raw[fp] = at.UTC().Format(time.RFC3339)
	}
	b, _ := json.Marshal(raw) // sorted keys: the same text for the same entries
	return string(b)
}
