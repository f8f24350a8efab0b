package framework

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Pebble is Let's Encrypt's ACME test server, validating DNS-01 challenges against the harness'
// BIND. Its own HTTPS listener has a certificate from a fresh harness CA (CABundle); the
// certificates it issues chain to a root that is new every start (Root).
type Pebble struct {
	// Directory is the ACME directory URL.
	Directory string
	// CABundle is the PEM CA that signs Pebble's listener (an ACME client's caBundle).
	CABundle []byte
	mgmt     string
	proc     *Process
	proxy    *http.Server
}

// PebbleOptions configures StartPebble.
type PebbleOptions struct {
	// Validity of issued certificates (default 90 days, like Let's Encrypt).
	Validity time.Duration
}

// StartPebble starts Pebble resolving challenges through dnsSrv and stops it when t ends.
func StartPebble(t testing.TB, dnsSrv *DNSServer, opts PebbleOptions) *Pebble {
	t.Helper()
	p, err := startPebble(TestDir(t), dnsSrv, opts)
	if err != nil {
		t.Fatalf("pebble: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- pebble (tail) ---\n%s", p.proc.Tail(4000))
		}
		_ = p.proxy.Close()
		_ = p.proc.Stop()
	})
	return p
}

func startPebble(testDir string, dnsSrv *DNSServer, opts PebbleOptions) (*Pebble, error) {
	tools, err := LocateTools(ToolPebble)
	if err != nil {
		return nil, err
	}
	dir, err := componentDir(testDir, "pebble")
	if err != nil {
		return nil, err
	}
	ca, err := newTestCA("pebble-listener-ca")
	if err != nil {
		return nil, err
	}
	certPEM, keyPEM, err := ca.serving("pebble", []string{"localhost", "pebble"}, "127.0.0.1")
	if err != nil {
		return nil, err
	}
	ports, err := FreePorts(4)
	if err != nil {
		return nil, err
	}
	if opts.Validity == 0 {
		opts.Validity = 90 * 24 * time.Hour
	}
	for name, b := range map[string][]byte{"cert.pem": certPEM, "key.pem": keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return nil, err
		}
	}
	cfg, err := json.Marshal(map[string]any{"pebble": map[string]any{
		"listenAddress":                  fmt.Sprintf("127.0.0.1:%d", ports[0]),
		"managementListenAddress":        fmt.Sprintf("127.0.0.1:%d", ports[1]),
		"certificate":                    filepath.Join(dir, "cert.pem"),
		"privateKey":                     filepath.Join(dir, "key.pem"),
		"httpPort":                       ports[2],
		"tlsPort":                        ports[3],
		"ocspResponderURL":               "",
		"externalAccountBindingRequired": false,
		"retryAfter":                     map[string]int{"authz": 1, "order": 1},
		"keyAlgorithm":                   "ecdsa",
		"profiles": map[string]any{"default": map[string]any{
			"description": "harness default", "validityPeriod": int64(opts.Validity / time.Second)}},
	}})
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, "pebble-config.json")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		return nil, err
	}
	p := &Pebble{Directory: fmt.Sprintf("https://127.0.0.1:%d/dir", ports[0]), CABundle: ca.pem,
		mgmt: fmt.Sprintf("https://127.0.0.1:%d", ports[1])}
	p.proc, err = StartProcess(dir, ProcessSpec{Name: "pebble", Path: tools.Path(ToolPebble),
		Args: []string{"-config", cfgPath, "-dnsserver", dnsSrv.Addr},
		// No sleeps before validation, no random nonce rejections, a new authorization for
		// every order (so every renewal really goes through DNS-01).
		Env: []string{"PEBBLE_VA_NOSLEEP=1", "PEBBLE_WFE_NONCEREJECT=0", "PEBBLE_AUTHZREUSE=0"}})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := waitFor(ctx, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		if exited, err := p.proc.Exited(); exited {
			return false, fmt.Errorf("pebble exited: %w", err)
		}
		_, err := p.get(ctx, p.Directory)
		return err == nil, nil
	}); err != nil {
		_ = p.proc.Stop()
		return nil, fmt.Errorf("pebble not answering: %w\n%s", err, p.proc.Tail(2000))
	}
	if err := p.serveWithOrderLocation(fmt.Sprintf("127.0.0.1:%d", ports[0]), certPEM, keyPEM); err != nil {
		_ = p.proc.Stop()
		return nil, err
	}
	return p, nil
}

// serveWithOrderLocation puts Pebble's ACME API behind a proxy that adds the order's URL as the
// Location of every finalize answer, as Let's Encrypt's Boulder sends it and Pebble does not.
// cert-manager's ACME client (golang.org/x/crypto/acme CreateOrderCert) polls an order that is
// still "processing" after finalize at that Location; without it it polls "" and fails with
// `Post "": unsupported protocol scheme`, and under load cert-manager then backs the Certificate
// off for up to an hour (TestTLS failed so in CI). Everything else passes through untouched: the
// Host is kept, so Pebble's URLs and the JWS "url" checks name the proxy.
func (p *Pebble) serveWithOrderLocation(pebbleAddr string, certPEM, keyPEM []byte) error {
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return err
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(p.CABundle)
	target := &url.URL{Scheme: "https", Host: pebbleAddr}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host
		},
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
		ModifyResponse: func(resp *http.Response) error {
			req := resp.Request
			if id, ok := strings.CutPrefix(req.URL.Path, "/finalize-order/"); ok && resp.Header.Get("Location") == "" && resp.StatusCode == http.StatusOK {
				resp.Header.Set("Location", "https://"+req.Host+"/my-order/"+id)
			}
			return nil
		},
	}
	p.proxy = &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.proxy.Serve(l) }()
	p.Directory = "https://" + l.Addr().String() + "/dir"
	return nil
}

// Roots is a pool with the root Pebble issues under (fetched from its management interface).
func (p *Pebble) Roots(ctx context.Context) (*x509.CertPool, error) {
	b, err := p.get(ctx, p.mgmt+"/roots/0")
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("pebble root: no certificate in %d bytes", len(b))
	}
	return pool, nil
}

func (p *Pebble) get(ctx context.Context, url string) ([]byte, error) {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(p.CABundle)
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return io.ReadAll(resp.Body)
}
