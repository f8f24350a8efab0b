package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardgate/shardgate/test/framework"
)

// TestDemoStops runs the real demo binary in a terminal (tmux, as a person would) and stops it
// the four ways a person does: Ctrl-C, SIGTERM, closing the terminal (SIGHUP) and SIGKILL. The
// first three end with one line and exit status 0; after every one of them, no process the demo
// started is left (SIGKILL: within five seconds). The first three run with simulated nodes (each
// start takes seconds; the stopping is the same code with real nodes); SIGKILL runs with a real
// node serving HTTP through Traefik and another through HAProxy (the demo's two router types),
// whose containerd shims and routers are nobody's children but the kernel's.
func TestDemoStops(t *testing.T) {
	const readyWithin = 8 * time.Minute
	if testing.Short() {
		t.Skip("starts the demo four times (about a minute)")
	}
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatal("tmux is not installed (hack/install-deps.sh installs it)")
	}
	dir := framework.TestDir(t)
	bin := filepath.Join(dir, "shardgate-demo")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// One tmux server per case: a case that ends its only session ends its server, and a new
	// session asked of a server still exiting fails ("server exited unexpectedly").
	var socket string
	run := func(args ...string) (string, error) {
		out, err := exec.Command(tmux, append([]string{"-L", socket}, args...)...).CombinedOutput()
		return string(out), err
	}

	for i, tc := range []struct {
		name string
		stop func(t *testing.T, session string, launcher int)
		// clean: one last line and exit status 0 (not for SIGKILL).
		clean bool
	}{
		{"Ctrl-C", func(t *testing.T, session string, _ int) { mustRun(t, run, "send-keys", "-t", session, "C-c") }, true},
		{"SIGTERM", func(t *testing.T, _ string, launcher int) { check(t, syscall.Kill(launcher, syscall.SIGTERM)) }, true},
		{"closed terminal", func(t *testing.T, session string, _ int) { mustRun(t, run, "kill-session", "-t", session) }, true},
		{"SIGKILL", func(t *testing.T, _ string, launcher int) { check(t, syscall.Kill(launcher, syscall.SIGKILL)) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			socket = fmt.Sprintf("sgdemo-%d-%d", os.Getpid(), i)
			t.Cleanup(func() { _, _ = run("kill-server") })
			// Short: a real node's kubelet makes unix sockets under it (108 bytes at most).
			runDir, err := os.MkdirTemp("", "sgdemo-")
			check(t, err)
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("the demo's run directory is kept: %s", runDir)
					return
				}
				_ = os.RemoveAll(runDir)
			})
			session := fmt.Sprintf("demo%d", i)
			// exec: the pane's process is the demo's launcher itself.
			// SIGKILL on a demo with a real node: containerd's shims and the routers they run are
			// not the demo's children, and must go too.
			nodes := "--simulated"
			if !tc.clean {
				nodes = ""
			}
			mustRun(t, run, "new-session", "-d", "-s", session, "-x", "160", "-y", "50",
				fmt.Sprintf("exec env SHARDGATE_RUN_DIR=%s %s %s --clusters 1 --nodes 1 --flip 0", runDir, bin, nodes))
			if tc.name == "Ctrl-C" {
				mustRun(t, run, "set-option", "-t", session, "remain-on-exit", "on")
			}
			pid, err := run("display-message", "-p", "-t", session, "#{pane_pid}")
			check(t, err)
			launcher, err := strconv.Atoi(strings.TrimSpace(pid))
			check(t, err)
			start := time.Now()
			// Up to eight minutes: in CI the demo starts beside the end-to-end suite's real nodes on
			// two cores (alone and warm, both routers answer 200 about 40 s after the launch; in CI
			// 65 s to over five minutes); what is tested here is the stop.
			ready := func() bool {
				out, _ := run("capture-pane", "-p", "-t", session)
				if fatal := failed(out); fatal != "" {
					t.Fatalf("the demo failed: %s\n%s", fatal, lastLines(out, 40))
				}
				return strings.Contains(out, "Ctrl-C stops everything.") && strings.Contains(out, "Published") &&
					(tc.clean || (serves(out, "Ingress   http://") && serves(out, "HAProxy   http://")))
			}
			if !within(readyWithin, ready) {
				// What the screen and the demo's log say is all CI shows of a demo that is late.
				out, _ := run("capture-pane", "-p", "-t", session)
				log, _ := os.ReadFile(filepath.Join(runDir, logName))
				t.Fatalf("waited %s for the demo to be ready; its screen:\n%s\nthe end of its log:\n%s",
					readyWithin, lastLines(out, 40), lastLines(string(log), 30))
			}
			t.Logf("ready after %s with %d processes", time.Since(start).Round(time.Second), len(processesUnder(runDir)))
			if n := len(processesUnder(runDir)); n < 5 {
				t.Fatalf("only %d processes run under %s: the demo did not start its components", n, runDir)
			}
			stopped := time.Now()
			tc.stop(t, session, launcher)
			endWithin := 60 * time.Second
			if !tc.clean {
				endWithin = 5 * time.Second
			}
			waitFor(t, endWithin, "every process of the demo to end", func() bool {
				// The demo's real nodes run under /run/shardgate/sg<launcher PID>-… (other tests'
				// nodes may run meanwhile under their own prefix).
				return len(processesUnder(runDir)) == 0 && len(processesUnder(fmt.Sprintf("/run/shardgate/sg%d-", launcher%100000))) == 0 && !running(launcher)
			})
			t.Logf("%s: every process gone %s after the signal", tc.name, time.Since(stopped).Round(100*time.Millisecond))
			if !tc.clean {
				// What the kernel keeps of a killed demo (namespace names, cgroups) is swept by
				// the next launch; here, by the sweep alone.
				if out, err := exec.Command(bin, "--sweep").CombinedOutput(); err != nil {
					t.Fatalf("--sweep: %v\n%s", err, out)
				}
				prefix := fmt.Sprintf("sg%d-", launcher%100000)
				var left []string
				for _, pattern := range []string{"/run/netns/" + prefix + "*", "/sys/fs/cgroup/*/" + prefix + "*", "/run/shardgate/" + prefix + "*"} {
					m, _ := filepath.Glob(pattern)
					left = append(left, m...)
				}
				if len(left) > 0 {
					t.Fatalf("--sweep left the killed demo's %v", left)
				}
				return
			}
			log, err := os.ReadFile(filepath.Join(runDir, logName))
			check(t, err)
			lines := strings.Split(strings.TrimSpace(string(log)), "\n")
			if len(lines) < 2 || !strings.HasPrefix(lines[len(lines)-2], "demo stopped: all ") || lines[len(lines)-1] != "demo exit status 0" {
				t.Fatalf("the demo's log does not end with its last line and exit status 0:\n%s", log)
			}
			if tc.name == "Ctrl-C" {
				out, _ := run("capture-pane", "-p", "-t", session)
				var shown []string
				for _, l := range strings.Split(out, "\n") {
					if strings.TrimSpace(l) != "" && !strings.HasPrefix(l, "Pane is dead") {
						shown = append(shown, l)
					}
				}
				if last := shown[len(shown)-1]; !strings.Contains(last, "demo stopped: all ") {
					t.Fatalf("the terminal's last line is %q", last)
				}
				_, _ = run("kill-session", "-t", session)
			}
		})
	}
}

// serves: the summary has a row starting with what (after the cluster column) that got a 200.
func serves(summary, what string) bool {
	for _, l := range strings.Split(summary, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), what) && strings.Contains(l, "-> 200") {
			return true
		}
	}
	return false
}

// processesUnder lists the processes whose command line names dir (every component the demo
// starts keeps its files there), as hack/reap.sh finds them.
func processesUnder(dir string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmd), dir) || strings.Contains(string(cmd), "tmux") {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if i := strings.LastIndexByte(string(stat), ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
				continue // ended; its parent has not collected it yet
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if !within(d, cond) {
		t.Fatalf("waited %s for %s", d, what)
	}
}

// within polls cond until it holds (true) or d has passed (false).
func within(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(200 * time.Millisecond)
	}
	return true
}

// failed is the line of a demo that stopped on a harness failure ("demo: … (logs: …)"), if any.
func failed(screen string) string {
	for _, l := range strings.Split(screen, "\n") {
		if strings.HasPrefix(l, "demo: ") {
			return l
		}
	}
	return ""
}

// lastLines is the last n non-blank lines of s.
func lastLines(s string, n int) string {
	var kept []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			kept = append(kept, l)
		}
	}
	return strings.Join(kept[max(0, len(kept)-n):], "\n")
}

func mustRun(t *testing.T, run func(...string) (string, error), args ...string) {
	t.Helper()
	if out, err := run(args...); err != nil {
		t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
