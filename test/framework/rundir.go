package framework

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
)

var (
	runDirOnce sync.Once
	runDir     string
	runDirErr  error
	// runDirTemp: RunDir made runDir itself (no SHARDGATE_RUN_DIR), so Main removes it after a
	// passing run; shared environments keep their data there, outside any one test's directory.
	runDirTemp bool
)

// RunDir is the directory that holds every log, certificate and data directory of this test
// binary. `make test` sets SHARDGATE_RUN_DIR so that hack/reap.sh can stop any process of the run
// that survived a killed test binary; otherwise it is a fresh temporary directory.
func RunDir() (string, error) {
	runDirOnce.Do(func() {
		if d := os.Getenv("SHARDGATE_RUN_DIR"); d != "" {
			runDir, runDirErr = d, os.MkdirAll(d, 0o755)
			return
		}
		runDir, runDirErr = os.MkdirTemp("", "shardgate-run-")
		runDirTemp = runDirErr == nil
	})
	return runDir, runDirErr
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// TestDir returns a directory for t's components under RunDir. It is kept when the test fails
// (its path is logged) and removed when the test passes.
func TestDir(t testing.TB) string {
	t.Helper()
	root, err := RunDir()
	if err != nil {
		t.Fatalf("run dir: %v", err)
	}
	dir, err := os.MkdirTemp(root, unsafeName.ReplaceAllString(t.Name(), "_")+"-")
	if err != nil {
		t.Fatalf("test dir: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs and data kept in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	return dir
}

// componentDir makes dir/name.
func componentDir(dir, name string) (string, error) {
	d := filepath.Join(dir, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", fmt.Errorf("mkdir %s: %w", d, err)
	}
	return d, nil
}
