package framework

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Chromium is Debian's headless Chromium (hack/install-deps.sh installs it), run once per page:
// it loads a URL as a browser does, rendering the HTML and its inline styles, and prints the DOM
// or writes a screenshot.
type Chromium struct {
	path string
	dir  string
}

// NewChromium finds chromium; its profiles live under dir (the test's run directory).
func NewChromium(dir string) (*Chromium, error) {
	for _, p := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if _, err := os.Stat(p); err == nil {
			return &Chromium{path: p, dir: dir}, nil
		}
	}
	return nil, fmt.Errorf("chromium is not installed (hack/install-deps.sh installs Debian's chromium)")
}

// DumpDOM returns the DOM after the page loaded.
func (c *Chromium) DumpDOM(ctx context.Context, url string) (string, error) {
	out, err := c.run(ctx, "--dump-dom", url)
	return string(out), err
}

// Screenshot writes a PNG of the page at width×height pixels to path.
func (c *Chromium) Screenshot(ctx context.Context, url, path string, width, height int) error {
	if _, err := c.run(ctx, "--screenshot="+path, fmt.Sprintf("--window-size=%d,%d", width, height), "--hide-scrollbars", url); err != nil {
		return err
	}
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("chromium wrote no screenshot: %w", err)
	}
	if st.Size() == 0 {
		return fmt.Errorf("chromium wrote an empty screenshot at %s", path)
	}
	return nil
}

func (c *Chromium) run(ctx context.Context, args ...string) ([]byte, error) {
	profile, err := os.MkdirTemp(c.dir, "chromium-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(profile) }()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	// --no-sandbox: the tests run as root, where Chromium's sandbox refuses to start. The page is
	// our own, served from 127.0.0.1.
	cmd := exec.CommandContext(ctx, c.path, append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-dev-shm-usage", "--user-data-dir=" + profile, "--virtual-time-budget=5000"}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + profile}
	cmd.Dir = profile
	// Its own process group, killed whole on timeout: Chromium starts helper processes.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("chromium %v: %w\n%s", args, err, tail(stderr.String(), 2000))
	}
	// Helpers that outlive the browser would be reaped as survivors of the run: end the group.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	return stdout.Bytes(), nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// ScreenshotPath is where a test keeps a screenshot: <run dir>/screenshots/<name>.png, kept
// when the test passes (its own directory is removed then) until the next run.
func ScreenshotPath(name string) (string, error) {
	root, err := RunDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return filepath.Join(dir, name+".png"), nil
}
