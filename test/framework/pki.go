package framework

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// testCA is a fresh certificate authority for the harness' own servers.
type testCA struct {
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	pem    []byte
	serial int64
}

func newTestCA(name string) (*testCA, error) {
	now := time.Now()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), serial: 1}, nil
}

// serving issues a server certificate for dnsNames and ips; PEM certificate and key.
func (ca *testCA) serving(name string, dnsNames []string, ips ...string) (certPEM, keyPEM []byte, err error) {
	now := time.Now()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	ca.serial++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(ca.serial), Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, DNSNames: dnsNames}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), ecKeyPEM(key), nil
}

// writeAPIServerPKI writes the serving certificate of an API server whose pods reach it at the
// kubernetes Service address (10.0.0.1, as in-cluster clients do), signed by a fresh CA, and the
// service-account signing key, into dir (envtest's CertDir: envtest keeps files it finds there).
// It returns the CA, which clients must trust.
func writeAPIServerPKI(dir string) ([]byte, error) {
	ca, err := newTestCA("shardgate-harness-ca")
	if err != nil {
		return nil, err
	}
	srvCert, srvKey, err := ca.serving("kube-apiserver",
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		"127.0.0.1", serviceIP)
	if err != nil {
		return nil, err
	}
	// The service-account signer only needs a key pair; a self-signed CA certificate carries it.
	sa, err := newTestCA("service-accounts")
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{
		"ca.crt":        ca.pem,
		"apiserver.crt": srvCert,
		"apiserver.key": srvKey,
		"sa-signer.crt": sa.pem,
		"sa-signer.key": ecKeyPEM(sa.key),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return nil, err
		}
	}
	return ca.pem, nil
}

func ecKeyPEM(k *ecdsa.PrivateKey) []byte {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		panic(err) // a freshly generated P-256 key always marshals
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}

// TenantCertificate is a certificate for dnsNames signed by a CA of its own, as a tenant brings
// its own: PEM certificate and key, and the pool that trusts only that CA.
func TenantCertificate(dnsNames ...string) (certPEM, keyPEM []byte, roots *x509.CertPool, err error) {
	ca, err := newTestCA("tenant-ca")
	if err != nil {
		return nil, nil, nil, err
	}
	certPEM, keyPEM, err = ca.serving(dnsNames[0], dnsNames)
	if err != nil {
		return nil, nil, nil, err
	}
	roots = x509.NewCertPool()
	roots.AddCert(ca.cert)
	return certPEM, keyPEM, roots, nil
}
