package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/test/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

// TestRunServesHealthMetricsAndLeads starts the real controller against a real seed API server
// and checks what an operator relies on: health and metrics endpoints answer, the leader Lease is
// held, and a cancelled context ends run without error (releasing the lease).
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
	waitHTTP(t, ctx, done, fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort), "shardgate_engaged_clusters")

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
}

// waitHTTP waits for url to answer 200 with want in the body; it fails at once when run ended.
func waitHTTP(t *testing.T, ctx context.Context, done chan error, url, want string) {
	t.Helper()
	var last string
	for ctx.Err() == nil {
		select {
		case err := <-done:
			t.Fatalf("run ended early: %v", err)
		default:
		}
		resp, err := http.Get(url)
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
