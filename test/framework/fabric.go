package framework

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Fabric is a simulated L2 network for real nodes, made of network namespaces: a fabric namespace
// holding bridge br0 (10.123.0.1/24, which also routes between the nodes' pod subnets), one
// namespace per node with a veth into br0 (10.123.0.10+i) and a bridge for its pods
// (10.124.i.0/24), and a client namespace (10.123.0.200) for HTTP from outside the cluster.
// Nothing in it reaches the machine's own network: the only way in is the harness.
type Fabric struct {
	// ID prefixes every namespace, cgroup and runtime path of this fabric.
	ID  string
	dir string

	mu     sync.Mutex
	nodes  []*RealNode
	netnss []string
}

const (
	fabricGateway = "10.123.0.1"
	clientIP      = "10.123.0.200"
	// serviceIP is the user cluster's "kubernetes" Service address (first IP of envtest's
	// 10.0.0.0/24): every node serves it locally, forwarding to the API server, as kube-proxy
	// would route it.
	serviceIP = "10.0.0.1"
)

var fabricSeq atomic.Int32

// HostPIDEnv, set by a process that runs the harness in a PID namespace of its own (the demo),
// is its PID on the host: fabric names carry it, so that they are unique on the host and a
// sweep can tell a live owner from a dead one.
const HostPIDEnv = "SHARDGATE_HOST_PID"

// HostPID is this process's PID as the host sees it.
func HostPID() int {
	if v, err := strconv.Atoi(os.Getenv(HostPIDEnv)); err == nil && v > 0 {
		return v
	}
	return os.Getpid()
}

// StartFabric creates the fabric and client namespaces; everything is deleted when t ends.
func StartFabric(t testing.TB) *Fabric {
	t.Helper()
	f := &Fabric{ID: fmt.Sprintf("sg%d-%d", HostPID()%100000, fabricSeq.Add(1)), dir: TestDir(t)}
	t.Cleanup(func() {
		if err := f.Stop(); err != nil {
			t.Errorf("stop fabric: %v", err)
		}
	})
	registerStop(f, f.Stop)
	if err := f.start(); err != nil {
		t.Fatalf("fabric: %v", err)
	}
	return f
}

func (f *Fabric) netns(name string) string { return f.ID + "-" + name }

func (f *Fabric) addNetns(name string) (string, error) {
	ns := f.netns(name)
	if err := ip("netns", "add", ns); err != nil {
		return "", err
	}
	f.mu.Lock()
	f.netnss = append(f.netnss, ns)
	f.mu.Unlock()
	return ns, ip("-n", ns, "link", "set", "lo", "up")
}

func (f *Fabric) start() error {
	fab, err := f.addNetns("fabric")
	if err != nil {
		return err
	}
	for _, args := range [][]string{
		{"-n", fab, "link", "add", "br0", "type", "bridge"},
		{"-n", fab, "addr", "add", fabricGateway + "/24", "dev", "br0"},
		{"-n", fab, "link", "set", "br0", "up"},
	} {
		if err := ip(args...); err != nil {
			return err
		}
	}
	// The fabric routes between the nodes' pod subnets (only inside its own namespaces).
	if err := sysctlInNetns(netnsPath(fab), "net.ipv4.ip_forward", "1"); err != nil {
		return err
	}
	_, err = f.attach("client", clientIP)
	return err
}

// attach creates namespace name with eth0 = a veth into br0 at addr, default route via the
// fabric, and returns the namespace.
func (f *Fabric) attach(name, addr string) (string, error) {
	ns, err := f.addNetns(name)
	if err != nil {
		return "", err
	}
	fab := f.netns("fabric")
	peer := "v-" + name
	for _, args := range [][]string{
		{"-n", fab, "link", "add", peer, "type", "veth", "peer", "name", "eth0", "netns", ns},
		{"-n", fab, "link", "set", peer, "master", "br0", "up"},
		{"-n", ns, "addr", "add", addr + "/24", "dev", "eth0"},
		{"-n", ns, "link", "set", "eth0", "up"},
		{"-n", ns, "route", "add", "default", "via", fabricGateway, "dev", "eth0", "onlink"},
	} {
		if err := ip(args...); err != nil {
			return "", err
		}
	}
	return ns, nil
}

// Get does an HTTP GET of http://addr/ with Host host from the client namespace, as a user
// outside the cluster would, and returns the status code and body ("" and an error when it
// could not connect).
func (f *Fabric) Get(ctx context.Context, addr, host string) (int, string, error) {
	return f.GetPath(ctx, addr, host, "/")
}

// HTTPClient is a client in the fabric's client namespace that keeps connections alive (up to
// conns to one address): a load generator's. tlsConfig nil: plain HTTP only.
func (f *Fabric) HTTPClient(tlsConfig *tls.Config, conns int) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, TLSClientConfig: tlsConfig,
		DialContext: f.Dial,
	}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// Dial connects to addr from the client namespace, as a client outside the cluster would.
func (f *Fabric) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	return DialInNetns(ctx, netnsPath(f.netns("client")), network, addr)
}

// GetPath sends GET http://host<path> from the client namespace to addr, like Get.
func (f *Fabric) GetPath(ctx context.Context, addr, host, path string) (int, string, error) {
	code, body, _, err := f.do(ctx, "http", addr, host, path, nil)
	return code, body, err
}

// GetTLS sends GET https://host/ from the client namespace to addr (host:port), verifying the
// server's certificate for host against roots, and returns the status, the body and the
// certificate the server presented.
func (f *Fabric) GetTLS(ctx context.Context, addr, host string, roots *x509.CertPool) (int, string, *x509.Certificate, error) {
	return f.do(ctx, "https", addr, host, "/", &tls.Config{RootCAs: roots, ServerName: host, MinVersion: tls.VersionTLS12})
}

func (f *Fabric) do(ctx context.Context, scheme, addr, host, path string, tlsConfig *tls.Config) (int, string, *x509.Certificate, error) {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext:       f.Dial,
		TLSClientConfig:   tlsConfig,
	},
		// Redirects are answers to look at, not to follow.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+addr+path, nil)
	if err != nil {
		return 0, "", nil, err
	}
	req.Host = host
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	var leaf *x509.Certificate
	if resp.TLS != nil && len(resp.TLS.PeerCertificates) > 0 {
		leaf = resp.TLS.PeerCertificates[0]
	}
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil || b.Len() > 1<<16 {
			break
		}
	}
	if loc := resp.Header.Get("Location"); loc != "" {
		b.WriteString("\nLocation: " + loc)
	}
	return resp.StatusCode, b.String(), leaf, nil
}

// Stop stops every node (their pods first), then deletes every namespace. Safe to call twice.
func (f *Fabric) Stop() error {
	unregisterStop(f)
	f.mu.Lock()
	nodes, nss := f.nodes, f.netnss
	f.nodes, f.netnss = nil, nil
	f.mu.Unlock()
	var errs []string
	for i := len(nodes) - 1; i >= 0; i-- {
		if err := nodes[i].Stop(); err != nil {
			errs = append(errs, err.Error())
		}
	}
	for i := len(nss) - 1; i >= 0; i-- {
		if err := ip("netns", "del", nss[i]); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// StartProxy serves an HTTP proxy on 127.0.0.1 that only tunnels (CONNECT) into the fabric:
// each tunnel's connection starts in the fabric's client namespace, so a process on the host
// (the seed controller's canary) reaches exactly the node address it asks for, as a seed reaches
// user clusters through its egress proxy. It returns the proxy URL and stops with t.
func (f *Fabric) StartProxy(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("fabric proxy: %v", err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		upstream, err := DialInNetns(ctx, netnsPath(f.netns("client")), "tcp", r.Host)
		cancel()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		hj, ok := w.(http.Hijacker)
		if !ok {
			upstream.Close()
			http.Error(w, "no hijacking", http.StatusInternalServerError)
			return
		}
		conn, buf, err := hj.Hijack()
		if err != nil {
			upstream.Close()
			return
		}
		_, _ = conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
		go func() {
			_, _ = io.Copy(upstream, buf)
			upstream.Close()
		}()
		_, _ = io.Copy(conn, upstream)
		conn.Close()
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}
