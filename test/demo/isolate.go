package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/shardgate/shardgate/test/framework"
)

// childEnv marks the demo process that runs inside its own PID namespace.
const childEnv = "SHARDGATE_DEMO_ISOLATED"

// isolated reports whether this is the demo inside its namespace.
func isolated() bool { return os.Getenv(childEnv) == "1" && os.Getpid() == 1 }

// launch runs this binary again as PID 1 of a new PID and mount namespace and returns its exit
// status. Every process the demo starts lives in that namespace, and the kernel kills all of
// them when its first process ends, however it ends: a SIGKILLed demo leaves nothing behind.
// The launcher forwards SIGINT, SIGTERM and SIGHUP; if the launcher itself is killed, the
// namespace's first process gets SIGKILL (Pdeathsig) and the rest follows.
func launch() int {
	// Pdeathsig follows the thread that started the child: keep it alive until the child ends.
	runtime.LockOSThread()
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		return 1
	}
	// The launcher and the demo share the run directory: the demo keeps its log there, and the
	// launcher adds the exit status (the terminal may be gone by then).
	runDir := os.Getenv("SHARDGATE_RUN_DIR")
	if runDir == "" {
		if runDir, err = os.MkdirTemp("", "shardgate-demo-"); err != nil {
			fmt.Fprintf(os.Stderr, "demo: %v\n", err)
			return 1
		}
	}
	if err := sweepDeadDemos(); err != nil {
		fmt.Fprintf(os.Stderr, "demo: what earlier demos left could not all be removed: %v\n", err)
	}
	restore := takeTerminal()
	defer restore()
	cmd := exec.Command(self, os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), childEnv+"=1", "SHARDGATE_RUN_DIR="+runDir, fmt.Sprintf("%s=%d", framework.HostPIDEnv, os.Getpid()))
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "demo: starting in a PID namespace (needs root): %v\n", err)
		return 1
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	code := exitCode(cmd.Wait())
	// Killed processes leave kernel objects behind (network namespace names, cgroups, runtime
	// directories): a demo that did not stop cleanly is swept now, or by the next launch.
	if err := sweepDeadDemos(); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
	}
	if f, err := os.OpenFile(filepath.Join(runDir, logName), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		fmt.Fprintf(f, "demo exit status %d\n", code)
		_ = f.Close()
	}
	return code
}

func exitCode(err error) int {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if st, ok := exit.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			return 128 + int(st.Signal())
		}
		return exit.ExitCode()
	}
	if err != nil {
		return 1
	}
	return 0
}

// takeTerminal makes the demo the terminal's foreground process group, so that Ctrl-C reaches
// the demo alone (not make, which would report an interrupt) and a closed terminal sends its
// SIGHUP to the demo. It returns the function that gives the terminal back.
func takeTerminal() func() {
	fd := int(os.Stdin.Fd())
	prev, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	if err != nil {
		return func() {} // not a terminal
	}
	// A background group that changes the foreground gets SIGTTOU: ignore it meanwhile.
	signal.Ignore(syscall.SIGTTOU)
	if err := syscall.Setpgid(0, 0); err != nil {
		return func() {}
	}
	_ = unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, syscall.Getpgrp())
	return func() { _ = unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, prev) }
}

// privateProc gives the namespace its own /proc (so process IDs the components read match
// theirs) without touching the host's mounts.
func privateProc() error {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting /proc: %w", err)
	}
	return nil
}

// fabricName matches what the harness names after its owner's host PID: sg<pid>-<n>-...
var fabricName = regexp.MustCompile(`^sg([0-9]+)-[0-9]+`)

// sweepDeadDemos removes the network namespaces, cgroups and runtime directories of fabrics whose
// owner is gone (a SIGKILLed demo's processes die with its PID namespace; these outlive it). It
// returns what it could not remove.
func sweepDeadDemos() error {
	var errs []error
	dead := func(name string) bool {
		m := fabricName.FindStringSubmatch(name)
		if m == nil {
			return false
		}
		pid, _ := strconv.Atoi(m[1])
		return pid != os.Getpid() && !running(pid)
	}
	if entries, err := os.ReadDir("/run/netns"); err == nil {
		for _, e := range entries {
			if dead(e.Name()) {
				if out, err := exec.Command("ip", "netns", "del", e.Name()).CombinedOutput(); err != nil {
					errs = append(errs, fmt.Errorf("ip netns del %s: %w: %s", e.Name(), err, out))
				}
			}
		}
	}
	cgroups, _ := filepath.Glob("/sys/fs/cgroup/*/sg[0-9]*")
	cgroups2, _ := filepath.Glob("/sys/fs/cgroup/sg[0-9]*")
	for _, cg := range append(cgroups, cgroups2...) {
		if dead(filepath.Base(cg)) {
			// The namespace's processes were just killed: their cgroups empty a moment later.
			// A containerd killed before its containers leaves them running: they go too.
			framework.KillCgroupTree(cg)
			errs = append(errs, framework.RemoveCgroupTree(cg))
		}
	}
	if entries, err := os.ReadDir("/run/shardgate"); err == nil {
		for _, e := range entries {
			if dead(e.Name()) {
				errs = append(errs, os.RemoveAll(filepath.Join("/run/shardgate", e.Name())))
			}
		}
	}
	return errors.Join(errs...)
}

// running reports whether pid is a process that has not ended: a killed demo whose parent (the
// terminal) has not collected it yet is a zombie, and its fabric is a dead demo's.
func running(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] != 'Z'
}
