package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/test/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

// TestRunServesHealthMetricsAndLeads starts the real controller against a real seed API server
// and checks what an operator relies on: health and metrics endpoints answer (metrics over HTTPS,
// with its default self-signed certificate, only to a token the seed lets get /metrics: none or
// one that does not authenticate is 401, one without the role 403, plain HTTP no metrics), the
// leader Lease is held, and a cancelled context ends run without error (releasing the lease).
func TestRunServesHealthMetricsAndLeads(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a control plane built by make tools; make test runs it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	crds, err := framework.SeedCRDDirs()
	if err != nil {
		t.Fatal(err)
	}
	seed := framework.StartControlPlane(t, "seed", framework.ControlPlaneOptions{CRDDirs: crds})
	kc, err := seed.Kubeconfig("shardgate", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	kcPath := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kcPath, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	metricsPort, _ := framework.FreePort()
	healthPort, _ := framework.FreePort()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- run(runCtx, []string{
			"--kubeconfig=" + kcPath,
			"--leader-elect", "--leader-election-namespace=default",
			fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", metricsPort),
			fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", healthPort),
			"--dns-zone=example.test",
		})
	}()

	waitHTTP(t, ctx, done, fmt.Sprintf("http://127.0.0.1:%d/healthz", healthPort), "ok")
	waitHTTP(t, ctx, done, fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort), "ok")
	metrics := fmt.Sprintf("https://127.0.0.1:%d/metrics", metricsPort)
	reader, err := framework.MetricsReaderToken(seed)
	if err != nil {
		t.Fatal(err)
	}
	waitHTTP(t, ctx, done, metrics, "shardgate_engaged_clusters", reader)
	checkMetricsRefusals(t, ctx, seed, metricsPort)

	lease := &coordinationv1.Lease{}
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := seed.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "shardgate-seed-controller"}, lease)
		if err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("leader lease not held: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run returned %v after cancel", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return after cancel")
	}
	if err := seed.Client.Get(ctx, client.ObjectKeyFromObject(lease), lease); err != nil {
		t.Fatal(err)
	}
	if lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" {
		t.Fatalf("lease still held by %q after shutdown; want it released", *lease.Spec.HolderIdentity)
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	err := run(context.Background(), []string{"--leader-elect", "--leader-elect-lease-duration=5s", "--leader-elect-renew-deadline=10s"})
	if err == nil || !strings.Contains(err.Error(), "renew-deadline") {
		t.Fatalf("want a renew-deadline error, got %v", err)
	}
	if err := run(context.Background(), []string{"--no-such-flag"}); err == nil {
		t.Fatal("unknown flag accepted")
	}
	// A certificate directory without its files would quietly serve a self-signed certificate.
	err = run(context.Background(), []string{"--metrics-cert-dir=" + t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "tls.crt") {
		t.Fatalf("want a --metrics-cert-dir error, got %v", err)
	}
	err = run(context.Background(), []string{"--metrics-secure=false", "--metrics-cert-dir=/etc"})
	if err == nil || !strings.Contains(err.Error(), "--metrics-secure") {
		t.Fatalf("want a --metrics-secure error, got %v", err)
	}
}

// checkMetricsRefusals: /metrics answers nothing but 401 and 403 to scrapers the seed does not let
// get /metrics, and no metrics over plain HTTP.
func checkMetricsRefusals(t *testing.T, ctx context.Context, seed *framework.ControlPlane, port int) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "no-metrics"}}
	must(seed.Client.Create(ctx, sa))
	stranger, err := framework.ServiceAccountToken(seed, "default", "no-metrics")
	must(err)
	for _, tc := range []struct {
		name, token string
		want        int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a token that does not authenticate", "not-a-token", http.StatusUnauthorized},
		{"a token without the metrics-reader role", stranger, http.StatusForbidden},
	} {
		code, body := get(t, fmt.Sprintf("https://127.0.0.1:%d/metrics", port), tc.token)
		if code != tc.want || strings.Contains(body, "shardgate_") {
			t.Errorf("%s: %d, want %d: %.200s", tc.name, code, tc.want, body)
		}
	}
	code, body := get(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", port), "")
	if code == http.StatusOK || strings.Contains(body, "shardgate_") {
		t.Errorf("plain HTTP: %d %.200s", code, body)
	}
}

// insecure trusts any certificate: the controller's default one is self-signed.
var insecure = &http.Client{Timeout: 10 * time.Second,
	Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed

// get GETs url with token as the bearer token ("": none); the status code and body.
func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := insecure.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitHTTP waits for url to answer 200 with want in the body (sending token, if any, as the
// bearer token); it fails at once when run ended.
func waitHTTP(t *testing.T, ctx context.Context, done chan error, url, want string, token ...string) {
	t.Helper()
	var last string
	for ctx.Err() == nil {
		select {
		case err := <-done:
			t.Fatalf("run ended early: %v", err)
		default:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		for _, tok := range token {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := insecure.Do(req)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			last = fmt.Sprintf("%d %s", resp.StatusCode, b)
			if resp.StatusCode == http.StatusOK && strings.Contains(string(b), want) {
				return
			}
		} else {
			last = err.Error()
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s never answered 200 with %q; last: %.300s", url, want, last)
}
