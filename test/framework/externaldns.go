package framework

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ExternalDNS is a real external-dns process that reads DNSEndpoint objects from a control plane
// (the seed) and writes them to a DNSServer through RFC 2136 with the server's TSIG key.
type ExternalDNS struct {
	MetricsAddr string
	proc        *Process
}

// ExternalDNSOptions configures StartExternalDNS.
type ExternalDNSOptions struct {
	// OwnerID is the TXT registry owner (one per seed). Default "shardgate-e2e".
	OwnerID string
	// Namespace limits the DNSEndpoints read; empty means all namespaces.
	Namespace string
	// NodeFQDN, when set, makes it publish the control plane's nodes instead of DNSEndpoints
	// (--source=node --fqdn-template=NodeFQDN): what a seed operator runs per user cluster
	// without Shardgate.
	NodeFQDN string
	// LogLevel: default debug (the tests read its log); benches at scale say info, as the chart runs.
	LogLevel string
	// Interval between syncs; default 500ms, the chart's.
	Interval time.Duration
	// Args are more flags (a bench trying --events, --txt-cache-interval, a --label-filter share); one
	// naming a flag the harness sets replaces it.
	Args []string
}

// StartExternalDNS starts external-dns against seed and server and stops it when t ends.
func StartExternalDNS(t testing.TB, seed *ControlPlane, server *DNSServer, opts ExternalDNSOptions) *ExternalDNS {
	t.Helper()
	e, err := startExternalDNS(TestDir(t), seed, server, opts)
	if err != nil {
		t.Fatalf("external-dns: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- external-dns (tail) ---\n%s", e.proc.Tail(4000))
		}
		_ = e.proc.Stop()
	})
	return e
}

func startExternalDNS(testDir string, seed *ControlPlane, server *DNSServer, opts ExternalDNSOptions) (*ExternalDNS, error) {
	tools, err := LocateTools(ToolExternalDNS)
	if err != nil {
		return nil, err
	}
	dir, err := componentDir(testDir, "external-dns")
	if err != nil {
		return nil, err
	}
	kcPath, err := seed.WriteKubeconfig(dir, "external-dns")
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	if opts.OwnerID == "" {
		opts.OwnerID = "shardgate-e2e"
	}
	if opts.LogLevel == "" {
		opts.LogLevel = "debug"
	}
	if opts.Interval == 0 {
		opts.Interval = 500 * time.Millisecond
	}
	e := &ExternalDNS{MetricsAddr: fmt.Sprintf("127.0.0.1:%d", port)}
	args := []string{
		"--kubeconfig=" + kcPath,
		"--provider=rfc2136",
		"--rfc2136-host=127.0.0.1", fmt.Sprintf("--rfc2136-port=%d", server.Port),
		"--rfc2136-zone=" + server.Zone, "--rfc2136-axfr",
		"--rfc2136-tsig-keyname=" + server.TSIGName, "--rfc2136-tsig-secret-alg=" + server.TSIGAlg,
		"--domain-filter=" + server.Zone,
		"--registry=txt", "--txt-owner-id=" + opts.OwnerID, "--txt-wildcard-replacement=star",
		"--policy=sync", "--interval=" + opts.Interval.String(),
		// The chart's client budget (TestChartExternalDNSPublishesOnlyShardgatesEndpoints).
		"--kube-api-qps=200", "--kube-api-burst=400",
		"--metrics-address=" + e.MetricsAddr,
		"--log-level=" + opts.LogLevel,
	}
	if opts.NodeFQDN != "" {
		args = append(args, "--source=node", "--fqdn-template="+opts.NodeFQDN)
	} else {
		args = append(args, "--source=crd", "--crd-source-apiversion=externaldns.k8s.io/v1alpha1", "--crd-source-kind=DNSEndpoint")
	}
	if opts.Namespace != "" {
		args = append(args, "--namespace="+opts.Namespace)
	}
	args = overrideFlags(args, opts.Args)
	e.proc, err = StartProcess(dir, ProcessSpec{
		Name: "external-dns", Path: tools.Path(ToolExternalDNS), Args: args,
		Env: []string{"HOME=" + dir, "EXTERNAL_DNS_RFC2136_TSIG_SECRET=" + server.TSIGSecret},
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := waitFor(ctx, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		if exited, err := e.proc.Exited(); exited {
			return false, fmt.Errorf("external-dns exited: %w", err)
		}
		return e.healthy(ctx), nil
	}); err != nil {
		_ = e.proc.Stop()
		return nil, fmt.Errorf("external-dns not healthy: %w\n%s", err, e.proc.Tail(3000))
	}
	return e, nil
}

func (e *ExternalDNS) healthy(ctx context.Context) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+e.MetricsAddr+"/healthz", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Process gives access to the running external-dns (its log, its PID).
func (e *ExternalDNS) Process() *Process { return e.proc }

// Pause freezes (SIGSTOP) or resumes (SIGCONT) external-dns: records stay as they are in DNS
// meanwhile, whatever the DNSEndpoints say (a slow or stuck external-dns).
func (e *ExternalDNS) Pause(pause bool) error {
	sig := syscall.SIGCONT
	if pause {
		sig = syscall.SIGSTOP
	}
	return syscall.Kill(e.proc.PID(), sig)
}

// overrideFlags appends extra to args, dropping each "--name=value" of args whose name extra sets
// (external-dns' flag parser refuses a repeated flag).
func overrideFlags(args, extra []string) []string {
	name := func(f string) string { n, _, _ := strings.Cut(f, "="); return n }
	set := map[string]bool{}
	for _, f := range extra {
		set[name(f)] = true
	}
	var out []string
	for _, f := range args {
		if !set[name(f)] {
			out = append(out, f)
		}
	}
	return append(out, extra...)
}
