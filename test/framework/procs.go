package framework

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ProcessIdentity is what the kernel says a running process may do: the proof that a pod's
// securityContext is what its container actually got from kubelet, containerd and runc.
type ProcessIdentity struct {
	PID int
	// UID is the real user ID.
	UID int
	// CapEff is the effective capability set (bit n is capability n; 10 is NET_BIND_SERVICE).
	CapEff uint64
	// NoNewPrivs is true when the process can never gain privileges (allowPrivilegeEscalation false).
	NoNewPrivs bool
	// Seccomp is the process's seccomp mode: 2 is a filter (seccompProfile RuntimeDefault).
	Seccomp int
}

// ProcessesWithArg lists the host's processes that have arg as one of their arguments exactly.
// Container processes are visible here: real nodes share the host's PID namespace.
func ProcessesWithArg(arg string) ([]ProcessIdentity, error) {
	cmdlines, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		return nil, err
	}
	var out []ProcessIdentity
	for _, p := range cmdlines {
		b, err := os.ReadFile(p)
		if err != nil || !hasArg(b, arg) {
			continue // gone meanwhile, or another process
		}
		id, err := processIdentity(filepath.Dir(p))
		if err != nil {
			continue //nolint:nilerr // exited between the two reads
		}
		out = append(out, id)
	}
	return out, nil
}

func hasArg(cmdline []byte, arg string) bool {
	for _, a := range strings.Split(string(cmdline), "\x00") {
		if a == arg {
			return true
		}
	}
	return false
}

func processIdentity(dir string) (ProcessIdentity, error) {
	id := ProcessIdentity{}
	pid, err := strconv.Atoi(filepath.Base(dir))
	if err != nil {
		return id, err
	}
	id.PID = pid
	b, err := os.ReadFile(filepath.Join(dir, "status"))
	if err != nil {
		return id, err
	}
	seen := 0
	for _, line := range strings.Split(string(b), "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		fields := strings.Fields(val)
		if len(fields) == 0 {
			continue
		}
		switch key {
		case "Uid":
			id.UID, err = strconv.Atoi(fields[0])
			seen++
		case "CapEff":
			id.CapEff, err = strconv.ParseUint(fields[0], 16, 64)
			seen++
		case "NoNewPrivs":
			id.NoNewPrivs = fields[0] == "1"
			seen++
		case "Seccomp":
			id.Seccomp, err = strconv.Atoi(fields[0])
		}
		if err != nil {
			return id, fmt.Errorf("%s/status %s: %w", dir, key, err)
		}
	}
	if seen != 3 {
		return id, fmt.Errorf("%s/status: Uid, CapEff or NoNewPrivs missing", dir)
	}
	return id, nil
}

// ContainerProcesses lists the processes of the container whose runtime ID is id (a pod status's
// containerID without its "containerd://"), found by their cgroup, which runc names after it.
func ContainerProcesses(id string) ([]ProcessIdentity, error) {
	if len(id) < 12 {
		return nil, fmt.Errorf("container ID %q: too short to be one", id)
	}
	cgroups, err := filepath.Glob("/proc/[0-9]*/cgroup")
	if err != nil {
		return nil, err
	}
	var out []ProcessIdentity
	for _, p := range cgroups {
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), id) {
			continue // gone meanwhile, or another container's
		}
		pi, err := processIdentity(filepath.Dir(p))
		if err != nil {
			continue //nolint:nilerr // exited between the two reads
		}
		out = append(out, pi)
	}
	return out, nil
}

// ContainerCPU is the CPU time the container whose runtime ID is id has used, every process it
// ran included (reloaded HAProxy workers that are gone too): its cgroup's cpuacct.usage.
func ContainerCPU(id string) (time.Duration, error) {
	procs, err := ContainerProcesses(id)
	if err != nil {
		return 0, err
	}
	if len(procs) == 0 {
		return 0, fmt.Errorf("container %s: no process", id)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", procs[0].PID))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		// "4:cpu,cpuacct:/path" or "2:cpuacct:/path" (cgroup v1, as the real nodes' kubelets run).
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || !slices.Contains(strings.Split(f[1], ","), "cpuacct") {
			continue
		}
		u, err := os.ReadFile(filepath.Join(cgroupV1Root, f[1], f[2], "cpuacct.usage"))
		if err != nil {
			return 0, err
		}
		ns, err := strconv.ParseInt(strings.TrimSpace(string(u)), 10, 64)
		return time.Duration(ns), err
	}
	return 0, fmt.Errorf("container %s: no cpuacct cgroup in %q", id, b)
}

// RootReadOnly says whether process pid's root file system is mounted read-only, as its own
// mount namespace shows it (readOnlyRootFilesystem).
func RootReadOnly(pid int) (bool, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
	if err != nil {
		return false, err
	}
	// Fields: ID, parent, major:minor, root, mount point, options, ...; the last "/" wins (stacked).
	readOnly, found := false, false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 5 && f[4] == "/" {
			found, readOnly = true, slices.Contains(strings.Split(f[5], ","), "ro")
		}
	}
	if !found {
		return false, fmt.Errorf("process %d: no mount on /", pid)
	}
	return readOnly, nil
}

// Renice gives every thread of every process whose arguments mention dir the nice value n.
// Benchmarks use it to keep processes that stand in for other machines (user clusters' API
// servers) from taking the seed's CPU: setpriority acts per thread on Linux, so each task is set.
func Renice(dir string, n int) (procs int, err error) {
	cmdlines, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		return 0, err
	}
	for _, p := range cmdlines {
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), dir) {
			continue // gone meanwhile, or another process
		}
		tasks, _ := filepath.Glob(filepath.Join(filepath.Dir(p), "task", "[0-9]*"))
		for _, t := range tasks {
			tid, _ := strconv.Atoi(filepath.Base(t))
			if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, n); err != nil && err != syscall.ESRCH {
				return procs, fmt.Errorf("renice %s: %w", t, err)
			}
		}
		procs++
	}
	return procs, nil
}
