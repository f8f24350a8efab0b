package certs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// KeyPair is an issued certificate with its key, checked to belong together.
type KeyPair struct {
	// Leaf is the parsed end-entity certificate.
	Leaf *x509.Certificate
	// Cert is the PEM chain (leaf first), Key the PEM private key, CA the issuer's CA if the
	// Secret has one (ca.crt).
	Cert, Key, CA []byte
}

// Serial is the leaf's serial number in hex.
func (k *KeyPair) Serial() string { return fmt.Sprintf("%x", k.Leaf.SerialNumber) }

// Fixed descriptions of what is wrong with a Secret's key pair: never the content, never a
// parser's message (which may quote it).
var (
	errNoKeyPair  = errors.New("the Secret has no tls.crt and tls.key")
	errBadKeyPair = errors.New("tls.crt and tls.key do not parse as a PEM certificate chain and its private key")
)

// ParseKeyPair reads the kubernetes.io/tls data of a Secret.
func ParseKeyPair(data map[string][]byte) (*KeyPair, error) {
	crt, key := data[corev1.TLSCertKey], data[corev1.TLSPrivateKeyKey]
	if len(crt) == 0 || len(key) == 0 {
		return nil, errNoKeyPair
	}
	pair, err := tls.X509KeyPair(crt, key)
	if err != nil || len(pair.Certificate) == 0 {
		return nil, errBadKeyPair
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, errBadKeyPair
	}
	return &KeyPair{Leaf: leaf, Cert: crt, Key: key, CA: data["ca.crt"]}, nil
}

// ValidAt reports whether the certificate is inside its validity period at now.
func (k *KeyPair) ValidAt(now time.Time) bool {
	return !now.Before(k.Leaf.NotBefore) && now.Before(k.Leaf.NotAfter)
}

// Uncovered are the names the certificate does not cover (a wildcard covers one label).
func (k *KeyPair) Uncovered(names []string) []string {
	var out []string
	for _, n := range names {
		if err := k.Leaf.VerifyHostname(hostnameFor(n)); err != nil {
			out = append(out, n)
		}
	}
	return out
}

// hostnameFor is a concrete name a wildcard must match ("*.a.b" → "x.a.b"): VerifyHostname
// checks names a client would ask for, not wildcards.
func hostnameFor(name string) string {
	if len(name) > 2 && name[:2] == "*." {
		return "wildcard-check" + name[1:]
	}
	return name
}

// Beyond are what the certificate is valid for beyond names: DNS names and a common name not in
// the set, and every IP address, e-mail address and URI (a cluster's certificate has none). A key
// pair with any is not the cluster's and is never handed to its routers: its owner would hold a
// key for names that are someone else's.
func (k *KeyPair) Beyond(names []string) []string {
	var out []string
	for _, n := range k.Leaf.DNSNames {
		if !slices.Contains(names, n) {
			out = append(out, n)
		}
	}
	if cn := k.Leaf.Subject.CommonName; cn != "" && !slices.Contains(names, cn) && !slices.Contains(out, cn) {
		out = append(out, cn)
	}
	for _, ip := range k.Leaf.IPAddresses {
		out = append(out, ip.String())
	}
	out = append(out, k.Leaf.EmailAddresses...)
	for _, u := range k.Leaf.URIs {
		out = append(out, u.String())
	}
	return out
}
