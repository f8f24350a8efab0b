package admission

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"
)

const (
	// caValidity: a CA lives in one process's memory; a year bounds how long a restarted replica's
	// old CA (whose key is gone) stays in the caBundle when the bound does not push it out first.
	caValidity      = 365 * 24 * time.Hour
	servingValidity = 365 * 24 * time.Hour
	// renewBefore: a certificate is issued again this long before it expires (a replica that
	// runs that long), its new CA trusted beside the old one.
	renewBefore = 30 * 24 * time.Hour
	// backdate covers clocks behind the issuer's.
	backdate = time.Hour
)

// Bundle is a replica's CA and serving certificate with their keys, PEM-encoded (in memory only).
type Bundle struct{ CACert, CAKey, Cert, Key []byte }

// Renewal says what of a bundle must be issued again, and why ("" when nothing).
type Renewal struct {
	CA, Serving bool
	Why         string
}

// Plan decides what of b to issue for hosts at now: a new CA (and so a new serving certificate)
// when it is missing, unusable or within renewBefore of its expiry; a new serving certificate
// when it is missing, unusable, not the CA's, within renewBefore of its expiry, or for other
// names than hosts.
func Plan(b Bundle, hosts []string, now time.Time) Renewal {
	ca, err := parseCA(b)
	switch {
	case err != nil:
		return Renewal{CA: true, Serving: true, Why: "CA: " + err.Error()}
	case ca.NotAfter.Sub(now) < renewBefore:
		return Renewal{CA: true, Serving: true, Why: fmt.Sprintf("CA expires %s", ca.NotAfter.Format(time.RFC3339))}
	}
	pair, err := tls.X509KeyPair(b.Cert, b.Key)
	if err != nil {
		return Renewal{Serving: true, Why: "serving certificate: " + err.Error()}
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return Renewal{Serving: true, Why: "serving certificate: " + err.Error()}
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return Renewal{Serving: true, Why: "serving certificate: " + err.Error()}
	}
	if leaf.NotAfter.Sub(now) < renewBefore {
		return Renewal{Serving: true, Why: fmt.Sprintf("serving certificate expires %s", leaf.NotAfter.Format(time.RFC3339))}
	}
	if have, want := names(leaf), normalHosts(hosts); !slices.Equal(have, want) {
		return Renewal{Serving: true, Why: fmt.Sprintf("serving certificate is for %v, not %v", have, want)}
	}
	return Renewal{}
}

// Issue issues what r says of b for hosts at now and returns the new bundle.
func Issue(b Bundle, r Renewal, hosts []string, now time.Time) (Bundle, error) {
	if len(hosts) == 0 {
		return b, errors.New("no host names for the serving certificate")
	}
	if r.CA {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return b, err
		}
		tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: "shardgate-admission-ca"},
			NotBefore: now.Add(-backdate), NotAfter: now.Add(caValidity), IsCA: true, BasicConstraintsValid: true,
			MaxPathLenZero: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
		der, err := sign(tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			return b, err
		}
		if b.CAKey, err = encodeKey(key); err != nil {
			return b, err
		}
		b.CACert = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	}
	if !r.CA && !r.Serving {
		return b, nil
	}
	ca, err := parseCA(b)
	if err != nil {
		return b, err
	}
	caKey, err := parseKey(b.CAKey)
	if err != nil {
		return b, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return b, err
	}
	hosts = normalHosts(hosts)
	notAfter := now.Add(servingValidity)
	if ca.NotAfter.Before(notAfter) {
		notAfter = ca.NotAfter // never past its CA: Plan renews both together
	}
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: hosts[0]}, NotBefore: now.Add(-backdate),
		NotAfter: notAfter, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := sign(tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return b, err
	}
	if b.Key, err = encodeKey(key); err != nil {
		return b, err
	}
	b.Cert = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return b, nil
}

func sign(tmpl, parent *x509.Certificate, pub *ecdsa.PublicKey, signer *ecdsa.PrivateKey) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = serial
	return x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
}

func encodeKey(k *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func parseKey(p []byte) (*ecdsa.PrivateKey, error) {
	block, _ := pem.Decode(p)
	if block == nil {
		return nil, errors.New("no PEM key")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	ec, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, errors.New("not an ECDSA key")
	}
	return ec, nil
}

// parseCA is b's CA certificate, when its key is the one beside it.
func parseCA(b Bundle) (*x509.Certificate, error) {
	block, _ := pem.Decode(b.CACert)
	if block == nil {
		return nil, errors.New("missing")
	}
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, err
	}
	if !ca.IsCA {
		return nil, errors.New("not a CA")
	}
	key, err := parseKey(b.CAKey)
	if err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	if pub, ok := ca.PublicKey.(*ecdsa.PublicKey); !ok || !pub.Equal(&key.PublicKey) {
		return nil, errors.New("its key is not the certificate's")
	}
	return ca, nil
}

// names are a certificate's DNS names and IP addresses, sorted.
func names(c *x509.Certificate) []string {
	out := slices.Clone(c.DNSNames)
	for _, ip := range c.IPAddresses {
		out = append(out, ip.String())
	}
	slices.Sort(out)
	return out
}

// normalHosts are hosts sorted, without duplicates, IPs in their canonical form.
func normalHosts(hosts []string) []string {
	out := make([]string, 0, len(hosts))
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			h = ip.String()
		}
		out = append(out, h)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
