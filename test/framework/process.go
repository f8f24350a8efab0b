package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is one real component (kwok, BIND, external-dns, Traefik, ...) started by the harness.
// Its output goes to a log file in the run directory; it is stopped by PID when the test ends.
type Process struct {
	Name    string
	LogPath string

	cmd  *exec.Cmd
	done chan struct{}
	err  error
	log  *os.File
}

// ProcessSpec says how to start a Process.
type ProcessSpec struct {
	Name string
	Path string
	Args []string
	// Env is the complete environment of the process; nil means a minimal one (PATH and HOME).
	// The harness never passes its own environment on: KUBECONFIG or KUBERNETES_SERVICE_HOST
	// would silently redirect a component to another API server.
	Env []string
	Dir string
}

// StartProcess starts spec with its output in dir/<name>.log and registers it so that it is
// stopped on test cleanup, on interrupt, and by the run reaper when the test binary dies.
func StartProcess(dir string, spec ProcessSpec) (*Process, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, spec.Name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Dir = spec.Dir
	cmd.Env = spec.Env
	if cmd.Env == nil {
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	}
	// Pdeathsig stops the child if the test binary is killed outright (go test -timeout, SIGKILL).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	fmt.Fprintf(logFile, "### %s %s\n", spec.Path, strings.Join(spec.Args, " "))
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", spec.Name, err)
	}
	p := &Process{Name: spec.Name, LogPath: logPath, cmd: cmd, done: make(chan struct{}), log: logFile}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	registerStopper(p)
	return p, nil
}

// PID of the running process.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended (and with what) without waiting.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Stop sends SIGTERM to the process group, waits up to 10 s, then SIGKILLs it. Safe to call twice.
func (p *Process) Stop() error {
	unregisterStopper(p)
	select {
	case <-p.done:
		return nil
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
	return nil
}

// Tail returns the last n bytes of the process log, for failure messages.
func (p *Process) Tail(n int) string { return tailFile(p.LogPath, n) }

func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// stoppers is every component that is still running, so that an interrupt can stop them all.
var stoppers = struct {
	sync.Mutex
	m map[any]func() error
}{m: map[any]func() error{}}

func registerStopper(p *Process) { registerStop(p, p.Stop) }

func unregisterStopper(p *Process) { unregisterStop(p) }

func registerStop(key any, stop func() error) {
	stoppers.Lock()
	defer stoppers.Unlock()
	stoppers.m[key] = stop
}

func unregisterStop(key any) {
	stoppers.Lock()
	defer stoppers.Unlock()
	delete(stoppers.m, key)
}

// StopAll stops every component still registered. Used on interrupt.
func StopAll() error {
	stoppers.Lock()
	all := make([]func() error, 0, len(stoppers.m))
	for _, s := range stoppers.m {
		all = append(all, s)
	}
	stoppers.Unlock()
	var errs []error
	for _, s := range all {
		errs = append(errs, s())
	}
	return errors.Join(errs...)
}

// waitFor polls cond every interval until it returns true, an error, or ctx ends.
func waitFor(ctx context.Context, interval time.Duration, cond func(context.Context) (bool, error)) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	var lastErr error
	for {
		ok, err := cond(ctx)
		if ok {
			return nil
		}
		if err != nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return fmt.Errorf("%w (last error: %w)", ctx.Err(), lastErr)
			}
			return ctx.Err()
		case <-t.C:
		}
	}
}
