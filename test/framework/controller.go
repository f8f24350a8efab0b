package framework

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildMu sync.Mutex
	builds  = map[string]*build{}
)

type build struct {
	once sync.Once
	path string
	err  error
}

// ControllerBinary builds cmd/seed-controller once per test binary and returns its path.
func ControllerBinary() (string, error) { return goBinary("seed-controller") }

// PluginBinary builds cmd/kubectl-shardgate (the kubectl plugin) once per test binary.
func PluginBinary() (string, error) { return goBinary("kubectl-shardgate") }

// goBinary builds ./cmd/<name> into the run directory once per test binary.
func goBinary(name string) (string, error) {
	buildMu.Lock()
	b := builds[name]
	if b == nil {
		b = &build{}
		builds[name] = b
	}
	buildMu.Unlock()
	b.once.Do(func() {
		root, err := RepoRoot()
		if err != nil {
			b.err = err
			return
		}
		dir, err := RunDir()
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, fmt.Sprintf("%s-%d", name, os.Getpid()))
		cmd := exec.Command("go", "build", "-o", b.path, "./cmd/"+name)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %s: %w\n%s", name, err, out)
		}
	})
	return b.path, b.err
}

// Controller is the real seed-controller binary running against a seed.
type Controller struct {
	// MetricsAddr serves /metrics (HTTPS with a certificate of metricsCA, bearer tokens).
	MetricsAddr string
	HealthAddr  string
	// StatusAddr serves the status page (HTTPS, self-signed, bearer tokens).
	StatusAddr string
	proc       *Process
	spec       ProcessSpec
	dir        string

	seed      *ControlPlane
	metricsCA *x509.CertPool
	// The scraper's token (Metrics), minted on first use.
	tokenMu    sync.Mutex
	token      string
	tokenUntil time.Time
}

// StartController runs seed-controller against seed with extra flags (e.g. --dns-zone) and
// stops it when t ends.
func StartController(t testing.TB, seed *ControlPlane, args ...string) *Controller {
	t.Helper()
	return StartControllerAs(t, seed, nil, args...)
}

// StartControllerAs is StartController with the seed credentials in kubeconfig (nil: a new
// cluster-admin user), e.g. a token of the chart's ServiceAccount, so that the controller has
// exactly the RBAC the chart grants.
func StartControllerAs(t testing.TB, seed *ControlPlane, kubeconfig []byte, args ...string) *Controller {
	t.Helper()
	c, err := startController(TestDir(t), seed, kubeconfig, args)
	if err != nil {
		t.Fatalf("seed-controller: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- seed-controller (tail) ---\n%s", c.proc.Tail(6000))
		}
		_ = c.proc.Stop()
	})
	return c
}

// ControllerOptions says which controller binary StartControllerWith runs, and how.
type ControllerOptions struct {
	// Binary is the seed-controller to run (default: ControllerBinary, this tree's), e.g. a
	// previous release's built by an upgrade spec.
	Binary string
	// Name of its folder and log in the test's directory (default seed-controller): two
	// controllers of one test (old and new) keep apart logs.
	Name string
	// Kubeconfig as in StartControllerAs (nil: a new cluster-admin user).
	Kubeconfig []byte
	// Env is added to the process' minimal environment (e.g. POD_NAMESPACE, as the chart sets it).
	Env []string
}

// StartControllerWith is StartControllerAs with a binary, folder name and environment of the
// caller's choosing.
func StartControllerWith(t testing.TB, seed *ControlPlane, opts ControllerOptions, args ...string) *Controller {
	t.Helper()
	c, err := startControllerWith(TestDir(t), seed, opts, args)
	if err != nil {
		t.Fatalf("%s: %v", opts.name(), err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- %s (tail) ---\n%s", opts.name(), c.proc.Tail(6000))
		}
		_ = c.proc.Stop()
	})
	return c
}

func (o ControllerOptions) name() string {
	if o.Name == "" {
		return "seed-controller"
	}
	return o.Name
}

func startController(testDir string, seed *ControlPlane, kubeconfig []byte, args []string) (*Controller, error) {
	return startControllerWith(testDir, seed, ControllerOptions{Kubeconfig: kubeconfig}, args)
}

func startControllerWith(testDir string, seed *ControlPlane, opts ControllerOptions, args []string) (*Controller, error) {
	bin, kubeconfig := opts.Binary, opts.Kubeconfig
	if bin == "" {
		var err error
		if bin, err = ControllerBinary(); err != nil {
			return nil, err
		}
	}
	dir, err := componentDir(testDir, opts.name())
	if err != nil {
		return nil, err
	}
	kcPath := filepath.Join(dir, "kubeconfig")
	if kubeconfig == nil {
		kcPath, err = seed.WriteKubeconfig(dir, "shardgate")
	} else {
		err = os.WriteFile(kcPath, kubeconfig, 0o600)
	}
	if err != nil {
		return nil, err
	}
	// A port taken between choosing and binding (by a client connection's ephemeral port, or
	// by another package's server) fails the start: choose again, three times at most.
	for attempt := 1; ; attempt++ {
		c, err := startControllerOn(dir, bin, kcPath, seed, opts, args)
		if err == nil || attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			return c, err
		}
	}
}

// startControllerOn starts the controller on three distinct free ports.
func startControllerOn(dir, bin, kcPath string, seed *ControlPlane, opts ControllerOptions, args []string) (*Controller, error) {
	ports, err := FreePorts(3)
	if err != nil {
		return nil, err
	}
	certDir := filepath.Join(dir, "metrics-tls")
	ca, err := writeMetricsCert(certDir)
	if err != nil {
		return nil, err
	}
	c := &Controller{MetricsAddr: fmt.Sprintf("127.0.0.1:%d", ports[0]), HealthAddr: fmt.Sprintf("127.0.0.1:%d", ports[1]),
		StatusAddr: fmt.Sprintf("127.0.0.1:%d", ports[2]), dir: dir, seed: seed, metricsCA: ca}
	var env []string
	if len(opts.Env) > 0 {
		env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, opts.Env...)
	}
	c.spec = ProcessSpec{Name: opts.name(), Path: bin, Env: env, Args: append([]string{
		"--kubeconfig=" + kcPath,
		"--metrics-bind-address=" + c.MetricsAddr,
		"--metrics-cert-dir=" + certDir,
		"--health-probe-bind-address=" + c.HealthAddr,
		"--status-bind-address=" + c.StatusAddr,
		// The harness registers kubeconfig Secrets in "default"; Cluster API kubeconfigs are
		// re-read often so that rotation shows within a spec's patience. Later args win.
		"--kubeconfig-secret-namespaces=default",
		"--kubeconfig-resync-period=5s",
		// The host cannot reach routers on a fabric without the fabric's proxy: specs that test
		// the canary turn it on with --canary-interval and --canary-proxy.
		"--canary-interval=0",
	}, args...)}
	if err := c.start(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Controller) start() error {
	p, err := StartProcess(c.dir, c.spec)
	if err != nil {
		return err
	}
	c.proc = p
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return waitFor(ctx, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		if exited, err := p.Exited(); exited {
			return false, fmt.Errorf("seed-controller exited: %w\n%s", err, p.Tail(3000))
		}
		resp, err := http.Get("http://" + c.HealthAddr + "/readyz")
		if err != nil {
			return false, nil //nolint:nilerr // not up yet: keep polling
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false, nil
		}
		// Ready only once every server listens: one that cannot bind stops the manager just
		// after /readyz answered.
		for _, addr := range []string{c.MetricsAddr, c.StatusAddr} {
			conn, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				return false, nil //nolint:nilerr // not up yet (or exiting: checked first next round)
			}
			conn.Close()
		}
		return true, nil
	})
}

// Restart stops the controller and starts it again with the same flags.
func (c *Controller) Restart() error {
	if err := c.proc.Stop(); err != nil {
		return err
	}
	return c.start()
}

// Stop stops the controller (SIGTERM: it releases its leader Lease, as a pod being replaced does).
func (c *Controller) Stop() error { return c.proc.Stop() }

// LogPath is the controller's log file.
func (c *Controller) LogPath() string { return c.proc.LogPath }

// Running reports whether the process is still alive (it must never crash on bad input).
func (c *Controller) Running() bool {
	exited, _ := c.proc.Exited()
	return !exited
}

// LogContains reports whether the controller's log contains s.
func (c *Controller) LogContains(s string) bool {
	b, err := os.ReadFile(c.proc.LogPath)
	return err == nil && strings.Contains(string(b), s)
}

// PID of the controller process (for its resident memory).
func (c *Controller) PID() int { return c.proc.PID() }

// Kill SIGKILLs the controller (a crash: no Lease released, nothing flushed) and waits until it
// is gone.
func (c *Controller) Kill() error {
	if err := syscall.Kill(c.proc.PID(), syscall.SIGKILL); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return waitFor(ctx, 50*time.Millisecond, func(context.Context) (bool, error) {
		exited, _ := c.proc.Exited()
		return exited, nil
	})
}
