package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/admission"
	"github.com/shardgate/shardgate/test/framework"
)

// TestAdmission: the controller's IngressProfile webhook, registered at a real API server the way
// the chart registers it (failurePolicy Ignore) but by URL on loopback: the controller, with
// exactly the chart's RBAC (release sg in default), creates its Secret and fills the caBundle; the API server then refuses what only the webhook catches (the
// CRD's schema cannot compile CEL nor read a certificate) with the field's name, accepts a valid
// profile, refuses an update that breaks it; and with the controller stopped, accepts an invalid
// profile (fail-open: a seed stays editable while its controller is down).
func TestAdmission(t *testing.T) {
	t.Parallel() // see main_test.go
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env := framework.StartEnvironment(t, framework.EnvironmentOptions{})
	seed := env.Seed
	port, err := framework.FreePort()
	must(t, err)
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "sg-shardgate"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "ingressprofiles.shardgate.io",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				URL: ptr.To(fmt.Sprintf("https://127.0.0.1:%d%s", port, admission.ProfilePath))},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{"shardgate.io"}, APIVersions: []string{"v1alpha1"},
					Resources: []string{"ingressprofiles"}}}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](5),
		}}}
	must(t, seed.Client.Create(ctx, vwc))
	sa := chartServiceAccount(ctx, t, seed, "default")
	ctl := framework.StartControllerAs(t, seed, sa, "--dns-zone="+framework.DefaultZone,
		fmt.Sprintf("--admission-webhook-bind-address=127.0.0.1:%d", port),
		"--admission-webhook-configuration=sg-shardgate", "--admission-webhook-hosts=127.0.0.1")
	// The chart's RBAC: no other webhook configuration, none created or deleted.
	for _, verb := range []string{"create", "update", "delete", "list"} {
		if allowed(ctx, t, seed, "system:serviceaccount:default:sg-shardgate", verb,
			"admissionregistration.k8s.io/validatingwebhookconfigurations", "") {
			t.Errorf("the chart's ServiceAccount may %s any ValidatingWebhookConfiguration", verb)
		}
	}

	// The caBundle trusts the certificate the webhook serves, and no Secret holds its key.
	trusted(ctx, t, seed, port)
	secrets := &corev1.SecretList{}
	must(t, seed.Client.List(ctx, secrets))
	for _, s := range secrets.Items {
		if s.Type == corev1.SecretTypeTLS {
			t.Errorf("a TLS Secret %s/%s: the webhook's key belongs in memory", s.Namespace, s.Name)
		}
	}

	profile := func(name string, a v1alpha1.AllocationSettings) *v1alpha1.IngressProfile {
		return &v1alpha1.IngressProfile{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.IngressProfileSpec{Allocation: a}}
	}
	refused := func(err error, want ...string) {
		t.Helper()
		if err == nil {
			t.Errorf("accepted, want refused naming %v", want)
			return
		}
		for _, w := range append(want, `admission webhook "ingressprofiles.shardgate.io" denied the request`) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("refused with %q, want it to name %q", err, w)
			}
		}
	}
	for _, tt := range []struct {
		name string
		a    v1alpha1.AllocationSettings
		want []string
	}{
		{"score does not compile", v1alpha1.AllocationSettings{Score: "shard.("}, []string{"spec.allocation.score: Invalid value"}},
		{"score is not a number", v1alpha1.AllocationSettings{Score: `shard.name + "x"`},
			[]string{"spec.allocation.score", "not a number"}},
		{"score may cost too much", v1alpha1.AllocationSettings{Score: `"shop.example" in route.hosts ? 0 : 1`},
			[]string{"spec.allocation.score", "estimated worst-case cost"}},
		// The schema asks for ^https:// and a non-empty caBundle; user info and a CA that holds no
		// certificate pass it.
		{"extender", v1alpha1.AllocationSettings{Extender: &v1alpha1.AllocationExtender{URL: "https://u:p@x.example/",
			CABundle: "not a certificate"}}, []string{"spec.allocation.extender.url", "spec.allocation.extender.caBundle"}},
	} {
		t.Logf("%s", tt.name)
		refused(seed.Client.Create(ctx, profile("bad", tt.a)), tt.want...)
	}
	good := profile("good", v1alpha1.AllocationSettings{Score: goldFirst})
	must(t, seed.Client.Create(ctx, good))
	// The controller writes the profile's status meanwhile: read it afresh on a conflict.
	refused(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := seed.Client.Get(ctx, client.ObjectKeyFromObject(good), good); err != nil {
			return err
		}
		good.Spec.Allocation.Score = "shard.("
		return seed.Client.Update(ctx, good)
	}), "spec.allocation.score")

	// Fail-open: without the controller the API server accepts what it would refuse, and the
	// controller's Valid condition is the backstop.
	must(t, ctl.Stop())
	must(t, seed.Client.Create(ctx, profile("unchecked", v1alpha1.AllocationSettings{Score: "shard.("})))

	// A restarted replica has a new CA of its own: added beside the old one, and trusted again.
	framework.StartControllerAs(t, seed, sa, "--dns-zone="+framework.DefaultZone,
		fmt.Sprintf("--admission-webhook-bind-address=127.0.0.1:%d", port),
		"--admission-webhook-configuration=sg-shardgate", "--admission-webhook-hosts=127.0.0.1")
	if n := trusted(ctx, t, seed, port); n != 2 {
		t.Errorf("caBundle holds %d CAs after a restart, want the old and the new", n)
	}
	refused(seed.Client.Create(ctx, profile("bad", v1alpha1.AllocationSettings{Score: "shard.("})), "spec.allocation.score")
}

// trusted waits until the webhook configuration's caBundle verifies the certificate served at
// 127.0.0.1:port, and returns how many certificates the bundle holds.
func trusted(ctx context.Context, t *testing.T, seed *framework.ControlPlane, port int) int {
	t.Helper()
	n := 0
	eventually(ctx, t, 30*time.Second, func() (bool, string) {
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		must(t, seed.Client.Get(ctx, client.ObjectKey{Name: "sg-shardgate"}, vwc))
		ca := vwc.Webhooks[0].ClientConfig.CABundle
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(ca) {
			return false, "no caBundle"
		}
		n = strings.Count(string(ca), "BEGIN CERTIFICATE")
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", fmt.Sprintf("127.0.0.1:%d", port),
			&tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12})
		if err != nil {
			return false, err.Error()
		}
		_ = conn.Close()
		return true, ""
	})
	return n
}
