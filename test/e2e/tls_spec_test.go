package e2e

import (
	"context"
	"crypto/x509"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/certs"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/test/framework"
)

// TLSSpecInput is what TLSSpec needs: a seed, one user cluster with real nodes, BIND, Pebble and
// cert-manager, and the controller.
type TLSSpecInput struct {
	Seed        *framework.ControlPlane
	User        *framework.ControlPlane
	DNS         *framework.DNSServer
	Pebble      *framework.Pebble
	CertManager *framework.CertManager
	Fabric      *framework.Fabric
	Nodes       []*framework.RealNode
	Controller  *framework.Controller
	// CertificateNamespace is the controller's --certificate-namespace.
	CertificateNamespace string
}

// TLSSpec proves HTTPS by default: a profile names an issuer once and a new cluster serves its
// names over HTTPS with a certificate from the ACME server (DNS-01 through BIND), renewals reach
// the routers without failed requests, shards' names join the certificate, a failing issuer is
// reported while the last good certificate keeps serving, and turning TLS off takes the key pair
// out of the user cluster.
func TLSSpec(ctx context.Context, t *testing.T, inputGetter func() TLSSpecInput) {
	in := inputGetter()
	seed, u, zone := in.Seed, in.User, in.DNS.Zone
	// The chart's model: a namespaced Issuer in Shardgate's certificate namespace, where no tenant
	// of the seed may create Certificates.
	must(t, in.CertManager.CreateACMEIssuer(ctx, seed, in.Pebble, in.DNS, framework.ACMEIssuer{Name: "pebble", Namespace: in.CertificateNamespace, SkipSelfCheck: true}))
	roots, err := in.Pebble.Roots(ctx)
	must(t, err)
	sel := map[string]string{"https": "yes"}
	p := &v1alpha1.IngressProfile{ObjectMeta: metav1.ObjectMeta{Name: "https"}, Spec: v1alpha1.IngressProfileSpec{
		ClusterSelector: metav1.LabelSelector{MatchLabels: sel}, DNS: v1alpha1.DNSSettings{TTL: 5},
		Shards: []v1alpha1.ShardSpec{realRouter(v1alpha1.ShardSpec{Name: v1alpha1.DefaultShardName})},
		TLS:    v1alpha1.TLSSettings{IssuerRef: &v1alpha1.IssuerReference{Name: "pebble", Kind: v1alpha1.KindIssuer}, RedirectHTTP: true},
		// Shardgate installs Gateway API's CRDs into the cluster: HTTPRoutes are served over HTTPS too.
		GatewayAPI: v1alpha1.GatewayAPIEnabled,
	}}
	must(t, seed.Client.Create(ctx, p))
	must(t, framework.DeployBackend(ctx, u, "default", "web", 1))
	must(t, u.Client.Create(ctx, shardIngress("web", "app.t1."+zone)))
	tlsHosts := shardIngress("web-tls", "secure.t1."+zone)
	tlsHosts.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"secure.t1." + zone}}} // no secretName
	must(t, u.Client.Create(ctx, tlsHosts))

	k := key("t1")
	nodeIP := in.Nodes[0].IP
	// https GETs host at the router's node and verifies the certificate against Pebble's root.
	https := func(host string) (int, string, *x509.Certificate, error) {
		return in.Fabric.GetTLS(ctx, nodeIP+":443", host, roots)
	}
	servedSerial := func() string {
		_, _, leaf, err := https("app.t1." + zone)
		if err != nil || leaf == nil {
			return ""
		}
		return fmt.Sprintf("%x", leaf.SerialNumber)
	}

	if !t.Run("a new cluster gets a certificate with no per-cluster step and serves HTTPS", func(t *testing.T) {
		start := time.Now()
		kc, err := u.RestrictedKubeconfig(ctx, "shardgate-tls", "config/user-cluster/rbac.yaml")
		must(t, err)
		putKubeconfigSecret(ctx, t, seed, "default", "t1", "t1", kc, sel)
		waitAnswer(ctx, t, in.DNS, "app.t1."+zone, framework.AnswerIs(nodeIP))
		eventually(ctx, t, 4*time.Minute, func() (bool, string) {
			code, body, _, err := https("app.t1." + zone)
			return err == nil && code == 200 && strings.Contains(body, "hello from web"), fmt.Sprintf("https://app.t1.%s: %d %q %v", zone, code, body, err)
		})
		t.Logf("cluster registered → first verified HTTPS 200 in %s", time.Since(start).Round(100*time.Millisecond))
		waitCertificate(ctx, t, seed, k, metav1.ConditionTrue, v1alpha1.ReasonCertificateIssued)
		ci := getCI(ctx, t, seed, k)
		want := []string{"*.t1." + zone, "t1." + zone}
		if st := ci.Status.Certificate; st == nil || !slices.Equal(st.DNSNames, want) || st.NotAfter == nil || st.SerialNumber != servedSerial() {
			t.Fatalf("status.certificate %+v, routers serve %s, want names %v", ci.Status.Certificate, servedSerial(), want)
		}
		// An Ingress whose spec.tls lists a host without a secretName is served with it too.
		code, body, _, err := https("secure.t1." + zone)
		if err != nil || code != 200 || !strings.Contains(body, "hello from web") {
			t.Fatalf("spec.tls without secretName: %d %q %v", code, body, err)
		}
		// Plain HTTP is redirected to HTTPS (tls.redirectHTTP).
		code, body, err = in.Fabric.Get(ctx, nodeIP+":80", "app.t1."+zone)
		if err != nil || code/100 != 3 || !strings.Contains(body, "Location: https://app.t1."+zone) {
			t.Fatalf("plain HTTP: %d %q %v, want a redirect to https", code, body, err)
		}
		// The private key exists in the seed Secret and in the routers' one Secret, nowhere else.
		secrets := &corev1.SecretList{}
		must(t, u.Client.List(ctx, secrets))
		var withKey []string
		for _, s := range secrets.Items {
			if len(s.Data[corev1.TLSPrivateKeyKey]) > 0 {
				withKey = append(withKey, s.Namespace+"/"+s.Name)
			}
		}
		if !slices.Equal(withKey, []string{names.Namespace + "/" + names.TLSSecretName}) {
			t.Fatalf("Secrets with a private key in the user cluster: %v", withKey)
		}
		cm := &corev1.ConfigMap{}
		must(t, u.Client.Get(ctx, client.ObjectKey{Namespace: names.UserInfoNamespace, Name: names.UserInfoName}, cm))
		if cm.Data["https"] != "true" || !strings.Contains(cm.Data["README"], "secretName") {
			t.Fatalf("users are not told about HTTPS: %v", cm.Data)
		}
		m, err := in.Controller.Metrics()
		must(t, err)
		checkDashboardMetrics(t, m, "shardgate_certificate_")
	}) {
		return // the rest builds on a served certificate
	}

	t.Run("a hostless HTTPRoute is served over HTTPS with the cluster's certificate", func(t *testing.T) {
		must(t, u.Client.Create(ctx, httpRoute("default", "gw")))
		label, _ := names.DefaultHostLabel("default", "gw")
		host := label + ".t1." + zone
		routeAllocated(ctx, t, u, "default", "gw")
		serial := servedSerial()
		eventually(ctx, t, time.Minute, func() (bool, string) {
			code, body, leaf, err := https(host)
			got := ""
			if leaf != nil {
				got = fmt.Sprintf("%x", leaf.SerialNumber)
			}
			return err == nil && code == 200 && strings.Contains(body, "hello from web") && got == serial,
				fmt.Sprintf("https://%s: %d %q serial %s (want %s) %v", host, code, body, got, serial, err)
		})
		code, body, err := in.Fabric.Get(ctx, nodeIP+":80", host)
		if err != nil || code/100 != 3 || !strings.Contains(body, "Location: https://"+host) {
			t.Fatalf("plain HTTP to the HTTPRoute's host: %d %q %v, want a redirect to https", code, body, err)
		}
	})

	// Twice: kubelet swaps a projected volume's files for new ones (a symlink switch), and a router
	// that watched only its configuration file saw the first swap and none after it.
	for i := 1; i <= 2; i++ {
		if !t.Run(fmt.Sprintf("renewal %d reaches the routers without a failed request", i), func(t *testing.T) {
			before := servedSerial()
			stop := loopTLSClient(ctx, in.DNS, in.Fabric, "app.t1."+zone, roots)
			start := time.Now()
			renew(ctx, t, seed, client.ObjectKey{Namespace: in.CertificateNamespace, Name: certs.CertificateName(k)})
			eventually(ctx, t, 4*time.Minute, func() (bool, string) {
				s := servedSerial()
				return s != "" && s != before, fmt.Sprintf("routers still serve %s (%s)", s, renewalStages(ctx, seed, u, in.CertificateNamespace, k))
			})
			took := time.Since(start)
			time.Sleep(2 * time.Second)
			n, failed := stop()
			t.Logf("renewal %d: new serial served %s after the trigger; client: %d HTTPS requests, %d failed", i, took.Round(100*time.Millisecond), n, failed)
			if n < 20 || failed > 0 {
				t.Fatalf("%d of %d HTTPS requests failed across the renewal", failed, n)
			}
		}) {
			break
		}
	}

	t.Run("a shard added joins the certificate", func(t *testing.T) {
		// Behind a Service (its own host ports would collide with the default shard's).
		internal := realRouter(v1alpha1.ShardSpec{Name: "internal", Publishing: v1alpha1.PublishNodePort})
		updateProfile(ctx, t, seed, "https", func(p *v1alpha1.IngressProfile) { p.Spec.Shards = append(p.Spec.Shards, internal) })
		eventually(ctx, t, 4*time.Minute, func() (bool, string) {
			_, _, leaf, err := https("x.internal.t1." + zone)
			return err == nil && leaf != nil && leaf.VerifyHostname("x.internal.t1."+zone) == nil, fmt.Sprintf("certificate for *.internal: %v", err)
		})
		waitCertificate(ctx, t, seed, k, metav1.ConditionTrue, v1alpha1.ReasonCertificateIssued)
	})

	t.Run("a failing issuer is reported while the last good certificate keeps serving", func(t *testing.T) {
		must(t, in.CertManager.CreateACMEIssuer(ctx, seed, in.Pebble, in.DNS, framework.ACMEIssuer{Name: "wrong-key", Namespace: in.CertificateNamespace, SkipSelfCheck: true, TSIGSecret: "d3Jvbmcga2V5IHdyb25nIGtleSB3cm9uZyBrZXk="}))
		good := servedSerial()
		updateProfile(ctx, t, seed, "https", func(p *v1alpha1.IngressProfile) { p.Spec.TLS.IssuerRef.Name = "wrong-key" })
		waitCertificate(ctx, t, seed, k, metav1.ConditionFalse, v1alpha1.ReasonChallengeFailed)
		c := condition(ctx, t, seed, k, v1alpha1.ConditionCertificateReady)
		if !strings.Contains(c.Message, "keep serving") {
			t.Errorf("CertificateReady does not say what is served meanwhile: %s", c.Message)
		}
		t.Logf("CertificateReady: %s/%s: %s", c.Status, c.Reason, c.Message)
		if r := condition(ctx, t, seed, k, v1alpha1.ConditionReady); r.Status != metav1.ConditionFalse {
			t.Errorf("Ready with a failing certificate: %+v", r)
		}
		if s := servedSerial(); s != good {
			t.Fatalf("routers serve %q, want the last good certificate %s", s, good)
		}
		updateProfile(ctx, t, seed, "https", func(p *v1alpha1.IngressProfile) { p.Spec.TLS.IssuerRef.Name = "pebble" })
		waitCertificate(ctx, t, seed, k, metav1.ConditionTrue, v1alpha1.ReasonCertificateIssued)
	})

	t.Run("removing the issuer stops issuance and takes the key pair out of the user cluster", func(t *testing.T) {
		updateProfile(ctx, t, seed, "https", func(p *v1alpha1.IngressProfile) { p.Spec.TLS = v1alpha1.TLSSettings{} })
		eventually(ctx, t, time.Minute, func() (bool, string) {
			ci := getCI(ctx, t, seed, k)
			cert := &cmapi.Certificate{}
			err := seed.Client.Get(ctx, client.ObjectKey{Namespace: in.CertificateNamespace, Name: certs.CertificateName(k)}, cert)
			s := &corev1.Secret{}
			uerr := u.Client.Get(ctx, client.ObjectKey{Namespace: names.Namespace, Name: names.TLSSecretName}, s)
			return ci.Status.Certificate == nil && apierrors.IsNotFound(err) && apierrors.IsNotFound(uerr),
				fmt.Sprintf("status.certificate %v, Certificate: %v, routers' Secret: %v", ci.Status.Certificate, err, uerr)
		})
		if c := condition(ctx, t, seed, k, v1alpha1.ConditionCertificateReady); c != nil {
			t.Errorf("CertificateReady left behind: %+v", c)
		}
		// Plain HTTP serves again once the routers rolled (on host ports: the old one leaves
		// before the new one starts, which takes a while on a loaded machine), and Ready follows.
		eventually(ctx, t, 2*time.Minute, func() (bool, string) {
			code, body := fabricGet(ctx, in.Fabric, nodeIP, "app.t1."+zone)
			return code == 200, fmt.Sprintf("http: %d %q", code, body)
		})
		waitCondition(ctx, t, seed, k, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReady)
	})
}

func TestTLS(t *testing.T) {
	t.Parallel() // see main_test.go
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	env := framework.StartEnvironment(t, framework.EnvironmentOptions{UserClusters: 1, DNS: true,
		RealNodes: [][]framework.RealNodeSpec{{{Name: "n1"}}}})
	pebble := framework.StartPebble(t, env.DNS, framework.PebbleOptions{})
	cm := framework.StartCertManager(t, env.Seed, env.DNS)
	const certNS = "shardgate"
	must(t, env.Seed.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: certNS}}))
	ctl := framework.StartController(t, env.Seed, "--dns-zone="+env.DNS.Zone, "--certificate-namespace="+certNS)
	TLSSpec(ctx, t, func() TLSSpecInput {
		return TLSSpecInput{Seed: env.Seed, User: env.Users[0], DNS: env.DNS, Pebble: pebble, CertManager: cm,
			Fabric: env.Fabrics[0], Nodes: env.Nodes[0], Controller: ctl, CertificateNamespace: certNS}
	})
}

// waitCertificate waits for CertificateReady status/reason (issuance takes longer than other
// conditions: an ACME order with DNS-01 challenges).
func waitCertificate(ctx context.Context, t *testing.T, seed *framework.ControlPlane, k client.ObjectKey, status metav1.ConditionStatus, reason string) {
	t.Helper()
	eventually(ctx, t, 3*time.Minute, func() (bool, string) {
		c := condition(ctx, t, seed, k, v1alpha1.ConditionCertificateReady)
		if c == nil {
			return false, "no CertificateReady"
		}
		return c.Status == status && c.Reason == reason, fmt.Sprintf("CertificateReady %s/%s: %s", c.Status, c.Reason, c.Message)
	})
}

// renew asks cert-manager to issue the Certificate again now, the way `cmctl renew` does.
func renew(ctx context.Context, t *testing.T, seed *framework.ControlPlane, k client.ObjectKey) {
	t.Helper()
	c := &cmapi.Certificate{}
	must(t, seed.Client.Get(ctx, k, c))
	now := metav1.Now()
	c.Status.Conditions = append(slices.DeleteFunc(c.Status.Conditions, func(x cmapi.CertificateCondition) bool { return x.Type == cmapi.CertificateConditionIssuing }),
		cmapi.CertificateCondition{Type: cmapi.CertificateConditionIssuing, Status: cmmeta.ConditionTrue, Reason: "ManuallyTriggered",
			Message: "Certificate re-issuance manually triggered", LastTransitionTime: &now})
	must(t, seed.Client.Status().Update(ctx, c))
}

// renewalStages says how far a new certificate got on its way to the routers: the serial of the
// seed's issued Secret, of status.certificate, and of the routers' Secret in the user cluster.
func renewalStages(ctx context.Context, seed, user *framework.ControlPlane, certNS string, k client.ObjectKey) string {
	serial := func(c client.Client, key client.ObjectKey) string {
		s := &corev1.Secret{}
		if err := c.Get(ctx, key, s); err != nil {
			return err.Error()
		}
		kp, err := certs.ParseKeyPair(s.Data)
		if err != nil {
			return err.Error()
		}
		return kp.Serial()
	}
	status := "none"
	if ci := (&v1alpha1.ClusterIngress{}); seed.Client.Get(ctx, k, ci) == nil && ci.Status.Certificate != nil {
		status = ci.Status.Certificate.SerialNumber
	}
	return fmt.Sprintf("issued %s, status %s, user cluster %s",
		serial(seed.Client, client.ObjectKey{Namespace: certNS, Name: certs.CertificateName(k)}), status,
		serial(user.Client, client.ObjectKey{Namespace: names.Namespace, Name: names.TLSSecretName}))
}

// loopTLSClient sends verified HTTPS requests for host (resolved through BIND each time) every
// 100 ms until stop, which reports how many were sent and how many failed.
func loopTLSClient(ctx context.Context, dnsSrv *framework.DNSServer, f *framework.Fabric, host string, roots *x509.CertPool) func() (int, int) {
	return loop(ctx, 100*time.Millisecond, func(ctx context.Context, _ int) (bool, bool) {
		a, err := dnsSrv.Lookup(ctx, host, dns.TypeA)
		if err != nil || len(a.Values) == 0 {
			return false, false
		}
		code, _, _, err := f.GetTLS(ctx, a.Values[0]+":443", host, roots)
		return true, err != nil || code != 200
	})
}
