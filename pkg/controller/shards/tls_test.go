package shards

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"math/big"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/certs"
	"github.com/shardgate/shardgate/pkg/certs/certstest"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/render"
)

// TestRoutersGetTheCertificate: with TLS on, the routers get the seed's issued key pair in one
// Secret and a configuration that makes it their default; a renewal reaches them without a
// rollout; an expired or broken issuance never replaces what they serve; TLS off removes both.
func TestRoutersGetTheCertificate(t *testing.T) {
	ctx := context.Background()
	seed := controllertest.Seed(t)
	ns := controllertest.Namespace(t, seed.Client)
	access := clusteraccess.NewFake()
	certNS := controllertest.Namespace(t, seed.Client) // Shardgate's certificate namespace
	r := &Reconciler{Client: seed.Client, Access: access, SecretReader: seed.Client, CertificateNamespace: certNS, Clock: clock.RealClock{}, Board: cistatus.NewBoard(seed.Client)}
	key := newCI(t, seed.Client, ns)
	ci := &v1alpha1.ClusterIngress{}
	must(t, seed.Client.Get(ctx, key, ci))
	ci.Spec.TLS = v1alpha1.ResolveTLS(v1alpha1.TLSSettings{IssuerRef: &v1alpha1.IssuerReference{Name: "le"}})
	must(t, seed.Client.Update(ctx, ci))
	// The names the cluster's Certificate asks for (the certificates controller reports them).
	ci.Status.Certificate = &v1alpha1.CertificateStatus{Name: certs.CertificateName(key), DNSNames: []string{"*.c1.z.test", "c1.z.test"}}
	must(t, seed.Client.Status().Update(ctx, ci))
	user := controllertest.UserCluster(access, key)
	u := user.Client

	secretKey := client.ObjectKey{Namespace: names.Namespace, Name: names.TLSSecretName}
	configKey := client.ObjectKey{Namespace: names.Namespace, Name: render.TraefikTLSConfigName}
	router := client.ObjectKey{Namespace: names.Namespace, Name: names.RouterName("default")}
	config := func() string {
		cm := &corev1.ConfigMap{}
		if !exists(t, u, cm, configKey) {
			t.Fatal("no TLS configuration for the routers")
		}
		return cm.Data["dynamic.yaml"]
	}
	template := func() string {
		d := &appsv1.Deployment{}
		if !exists(t, u, d, router) {
			t.Fatal("no router")
		}
		return d.Annotations[render.AppliedHashAnnotation]
	}

	// Before the first issuance: TLS-shaped routers, no Secret, a configuration naming none.
	controllertest.Reconcile(t, r, key, 2)
	if exists(t, u, &corev1.Secret{}, secretKey) || strings.Contains(config(), "defaultCertificate") {
		t.Fatal("a certificate was given before one was issued")
	}
	d := &appsv1.Deployment{}
	exists(t, u, d, router)
	if !mountsTLS(d) || !strings.Contains(strings.Join(d.Spec.Template.Spec.Containers[0].Args, " "), "--entryPoints.websecure.http.tls=true") {
		t.Fatalf("router without TLS: %+v", d.Spec.Template.Spec)
	}
	shape := template()

	issued := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: certNS, Name: certs.CertificateName(key)}, Type: corev1.SecretTypeTLS}
	now := time.Now()
	put := func(data map[string][]byte) {
		issued.Data = data
		if issued.ResourceVersion == "" {
			must(t, seed.Client.Create(ctx, issued))
		} else {
			must(t, seed.Client.Update(ctx, issued))
		}
	}
	served := func() []byte {
		s := &corev1.Secret{}
		if !exists(t, u, s, secretKey) {
			return nil
		}
		return s.Data[corev1.TLSCertKey]
	}
	first := certstest.TLSData(t, 1, []string{"c1.z.test", "*.c1.z.test"}, now.Add(-time.Hour), now.Add(24*time.Hour))
	put(first)
	controllertest.Reconcile(t, r, key, 1)
	if !bytes.Equal(served(), first[corev1.TLSCertKey]) || !strings.Contains(config(), "defaultCertificate") {
		t.Fatal("the issued certificate was not handed to the routers")
	}

	// Renewed: the new key pair, the same router template (no rollout).
	second := certstest.TLSData(t, 2, []string{"c1.z.test", "*.c1.z.test"}, now.Add(-time.Minute), now.Add(48*time.Hour))
	put(second)
	controllertest.Reconcile(t, r, key, 1)
	if !bytes.Equal(served(), second[corev1.TLSCertKey]) {
		t.Fatal("the renewed certificate did not reach the routers")
	}
	if template() != shape {
		t.Fatal("a renewal changed the router Deployment (a rollout for a new key pair)")
	}

	// Expired, not yet valid, broken, or valid for another cluster's names too: the routers keep
	// the last good one (the owner of this cluster never gets a key for names not its own).
	for name, data := range map[string]map[string][]byte{
		"other names too": certstest.TLSData(t, 5, []string{"c1.z.test", "*.c1.z.test", "*.victim.z.test"}, now.Add(-time.Minute), now.Add(72*time.Hour)),
		"an IP address":   ipCertificate(t, now),
		"expired":         certstest.TLSData(t, 3, []string{"c1.z.test"}, now.Add(-48*time.Hour), now.Add(-time.Hour)),
		"not yet valid":   certstest.TLSData(t, 4, []string{"c1.z.test"}, now.Add(time.Hour), now.Add(48*time.Hour)),
		"broken":          {corev1.TLSCertKey: []byte("garbage"), corev1.TLSPrivateKeyKey: second[corev1.TLSPrivateKeyKey]},
	} {
		put(data)
		controllertest.Reconcile(t, r, key, 1)
		if !bytes.Equal(served(), second[corev1.TLSCertKey]) {
			t.Fatalf("%s issuance replaced the routers' certificate", name)
		}
	}

	// TLS off: the key pair and the configuration leave the user cluster, routers lose TLS.
	must(t, seed.Client.Get(ctx, key, ci))
	ci.Spec.TLS = v1alpha1.TLSSettings{}
	must(t, seed.Client.Update(ctx, ci))
	controllertest.Reconcile(t, r, key, 1)
	if exists(t, u, &corev1.Secret{}, secretKey) || exists(t, u, &corev1.ConfigMap{}, configKey) {
		t.Fatal("TLS off left the key pair or its configuration in the user cluster")
	}
	exists(t, u, d, router)
	if mountsTLS(d) {
		t.Fatalf("router still mounts TLS: %+v", d.Spec.Template.Spec.Volumes)
	}
}

// ipCertificate is a key pair for the cluster's names and an IP address.
func ipCertificate(t *testing.T, now time.Time) map[string][]byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(6), DNSNames: []string{"c1.z.test"}, IPAddresses: []net.IP{net.ParseIP("10.0.0.1")},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(72 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	must(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	must(t, err)
	return map[string][]byte{corev1.TLSCertKey: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		corev1.TLSPrivateKeyKey: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// mountsTLS: whether the router pod has the TLS volume (it has the API token's too).
func mountsTLS(d *appsv1.Deployment) bool {
	return slices.ContainsFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "tls" })
}
