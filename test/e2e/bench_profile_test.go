package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/shardgate/shardgate/test/framework"
)

// profileDirEnv names a folder for CPU profiles of a bench's busiest phase: where a figure misses
// its goal, the profile says which process and which code the time went to (go tool pprof).
// Unset, benches profile nothing.
const profileDirEnv = "SHARDGATE_BENCH_PROFILE_DIR"

// pprofArgs are the controller's flags for a profile endpoint when profiling is asked for, and
// its address ("" and no flag otherwise).
func pprofArgs(b *testing.B) (string, []string) {
	if os.Getenv(profileDirEnv) == "" {
		return "", nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(b, err)
	addr := l.Addr().String()
	must(b, l.Close())
	return addr, []string{"--pprof-bind-address=" + addr}
}

// profileCPU, when profiling is asked for, records name-apiserver.pprof (the user cluster's
// kube-apiserver) and name-controller.pprof (the seed controller at controllerAddr, if any) over
// the next d, in the background; wait returns once both are written.
func profileCPU(ctx context.Context, b *testing.B, name string, u *framework.ControlPlane, controllerAddr string,
	d time.Duration) (wait func()) {
	dir := os.Getenv(profileDirEnv)
	if dir == "" {
		return func() {}
	}
	must(b, os.MkdirAll(dir, 0o755))
	apiserver, err := rest.HTTPClientFor(u.Config)
	must(b, err)
	query := fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(d.Seconds()))
	done := make(chan struct{}, 2)
	get := func(c *http.Client, url, file string) {
		defer func() { done <- struct{}{} }()
		if err := fetchTo(ctx, c, url, filepath.Join(dir, file)); err != nil {
			b.Logf("profile %s: %v", file, err)
		}
	}
	go get(apiserver, strings.TrimSuffix(u.Config.Host, "/")+query, name+"-apiserver.pprof")
	n := 1
	if controllerAddr != "" {
		n++
		go get(http.DefaultClient, "http://"+controllerAddr+query, name+"-controller.pprof")
	}
	return func() {
		for range n {
			<-done
		}
	}
}

func fetchTo(ctx context.Context, c *http.Client, url, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
