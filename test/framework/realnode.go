package framework

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RealNodeSpec describes a real node: kubelet and containerd (with runc) in their own network
// namespace, running pods for real.
type RealNodeSpec struct {
	Name   string
	Labels map[string]string
}

// RealNode is one running real node.
type RealNode struct {
	Name string
	// IP is the node's InternalIP on the fabric.
	IP string
	// Netns is the path of the node's network namespace (for ExecInNode, DialInNetns).
	Netns string
	// StartedIn says where the node's start spent its time ("network 0.2s, ...").
	StartedIn string

	fabric     *Fabric
	cp         *ControlPlane
	dir, run   string
	cgroup     string
	containerd *Process
	kubelet    *Process
	fwds       []*forwarder
}

// cgroupV1Root is where this machine mounts its cgroup v1 hierarchies (and cgroup2 at unified).
const cgroupV1Root = "/sys/fs/cgroup"

// AddRealNode starts a real node of cp on the fabric and waits until it is Ready.
func (f *Fabric) AddRealNode(ctx context.Context, cp *ControlPlane, spec RealNodeSpec) (*RealNode, error) {
	dir, err := componentDir(f.dir, "node-"+spec.Name)
	if err != nil {
		return nil, err
	}
	// One lock for the index and the append: nodes of a fabric may start side by side.
	f.mu.Lock()
	idx := len(f.nodes) + 1
	n := &RealNode{Name: spec.Name, IP: fmt.Sprintf("10.123.0.%d", 10+idx), fabric: f, cp: cp, dir: dir,
		run: filepath.Join("/run/shardgate", f.ID, spec.Name), cgroup: "/" + f.ID + "-" + spec.Name}
	f.nodes = append(f.nodes, n) // stopped with the fabric, whatever happens below
	f.mu.Unlock()
	mark := n.phases()
	if err := n.network(idx); err != nil {
		return nil, err
	}
	mark("network")
	if err := n.startRuntime(); err != nil {
		return nil, err
	}
	mark("runtime and images")
	if err := n.startKubelet(spec.Labels, idx); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if err := waitFor(wctx, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		if exited, err := n.kubelet.Exited(); exited {
			return false, fmt.Errorf("kubelet exited: %w\n%s", err, n.kubelet.Tail(3000))
		}
		node := &corev1.Node{}
		if err := cp.Client.Get(ctx, client.ObjectKey{Name: n.Name}, node); err != nil {
			return false, nil //nolint:nilerr // not registered yet
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	}); err != nil {
		return nil, fmt.Errorf("node %s not Ready: %w\n%s", n.Name, err, n.kubelet.Tail(3000))
	}
	mark("kubelet Ready")
	return n, nil
}

// phases returns a function that appends, to n.StartedIn, the time since its last call under
// name: where a node's start spent its seconds, for the environment's log.
func (n *RealNode) phases() func(name string) {
	last := time.Now()
	return func(name string) {
		if n.StartedIn != "" {
			n.StartedIn += ", "
		}
		n.StartedIn += fmt.Sprintf("%s %.1fs", name, time.Since(last).Seconds())
		last = time.Now()
	}
}

// network gives the node its namespace, its fabric address, a pod subnet routed by the fabric,
// and the API server: at 127.0.0.1:<its port> for the kubelet, and at the kubernetes Service
// address 10.0.0.1:443 for pods, translated (iptables DNAT, as kube-proxy does) to a forwarder on
// the node's own address, so that nothing listens on a port a host-network pod may want.
func (n *RealNode) network(idx int) error {
	f := n.fabric
	ns, err := f.attach(n.Name, n.IP)
	if err != nil {
		return err
	}
	n.Netns = netnsPath(ns)
	if err := ip("-n", f.netns("fabric"), "route", "add", podCIDR(idx), "via", n.IP); err != nil {
		return err
	}
	if err := sysctlInNetns(n.Netns, "net.ipv4.ip_forward", "1"); err != nil {
		return err
	}
	u, err := url.Parse(n.cp.Host())
	if err != nil {
		return err
	}
	api := net.JoinHostPort("127.0.0.1", u.Port())
	onNode := net.JoinHostPort(n.IP, u.Port())
	for _, listen := range []string{api, onNode} {
		fw, err := forwardFromNetns(n.Netns, listen, api)
		if err != nil {
			return err
		}
		n.fwds = append(n.fwds, fw)
	}
	for _, chain := range []string{"OUTPUT", "PREROUTING"} {
		out, err := exec.Command("nsenter", "--net="+n.Netns, "iptables", "-t", "nat", "-A", chain, "-d", serviceIP, "-p", "tcp",
			"--dport", "443", "-j", "DNAT", "--to-destination", onNode).CombinedOutput()
		if err != nil {
			return fmt.Errorf("service address on %s: %w: %s", n.Name, err, out)
		}
	}
	return nil
}

func podCIDR(idx int) string { return fmt.Sprintf("10.124.%d.0/24", idx) }

// startRuntime starts containerd in the node's network namespace and in a private mount
// namespace, where the three host-wide sysctl files the kubelet writes are plain files, then
// imports the harness images.
func (n *RealNode) startRuntime() error {
	tools, err := LocateTools(ToolContainerd, ToolCtr, ToolContainerdShim)
	if err != nil {
		return err
	}
	for _, d := range []string{"root", "kubelet", "pod-logs", "cni", "cni-ipam", "fake", "runc"} {
		if err := os.MkdirAll(filepath.Join(n.dir, d), 0o755); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(n.run, 0o755); err != nil {
		return err
	}
	for _, h := range cgroupV1Hierarchies() {
		if err := os.MkdirAll(filepath.Join(h, n.cgroup), 0o755); err != nil {
			return err
		}
	}
	fake := map[string]string{"overcommit_memory": "1", "panic": "10", "panic_on_oops": "1"}
	for name, v := range fake {
		if err := os.WriteFile(filepath.Join(n.dir, "fake", name), []byte(v+"\n"), 0o644); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(n.dir, "containerd.toml"), []byte(n.containerdConfig()), 0o644); err != nil {
		return err
	}
	script := fmt.Sprintf("mount --bind %[1]s/overcommit_memory /proc/sys/vm/overcommit_memory && "+
		"mount --bind %[1]s/panic /proc/sys/kernel/panic && mount --bind %[1]s/panic_on_oops /proc/sys/kernel/panic_on_oops && "+
		"exec %[2]s --config %[3]s", filepath.Join(n.dir, "fake"), tools.Path(ToolContainerd), filepath.Join(n.dir, "containerd.toml"))
	n.containerd, err = StartProcess(n.dir, ProcessSpec{Name: "containerd", Path: "nsenter",
		Args: []string{"--net=" + n.Netns, "unshare", "-m", "--propagation", "private", "--", "sh", "-c", script},
		Env:  []string{"PATH=" + tools.Dir + ":/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + n.dir}})
	if err != nil {
		return err
	}
	sock := n.socket()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := waitFor(ctx, 100*time.Millisecond, func(context.Context) (bool, error) {
		if exited, err := n.containerd.Exited(); exited {
			return false, fmt.Errorf("containerd exited: %w\n%s", err, n.containerd.Tail(2000))
		}
		_, err := os.Stat(sock)
		return err == nil, nil
	}); err != nil {
		return err
	}
	tars, err := ImageTars()
	if err != nil {
		return err
	}
	for _, tar := range tars {
		if err := n.ImportImage(tar); err != nil {
			return err
		}
	}
	return nil
}

// ImportImage imports an OCI layout tar (WriteOCIImage) into the node's containerd, where pods
// find it without a registry.
func (n *RealNode) ImportImage(tar string) error {
	tools, err := LocateTools(ToolCtr)
	if err != nil {
		return err
	}
	// --no-unpack: the CRI unpacks an image when a container first needs it, so a node pays only
	// for the images its pods run (each node holds all of them: ~350 MB).
	out, err := exec.Command(tools.Path(ToolCtr), "--address", n.socket(), "-n", "k8s.io", "images", "import",
		"--all-platforms", "--no-unpack", tar).CombinedOutput()
	if err != nil {
		return fmt.Errorf("import %s on %s: %w: %s", filepath.Base(tar), n.Name, err, out)
	}
	return nil
}

func (n *RealNode) socket() string { return filepath.Join(n.run, "containerd.sock") }

func (n *RealNode) containerdConfig() string {
	return fmt.Sprintf(`version = 3
root = %q
state = %q
[grpc]
  address = %q
[ttrpc]
  address = %q
[plugins]
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = %q
  [plugins.'io.containerd.cri.v1.runtime']
    # root on these machines lacks CAP_SYS_RESOURCE: runc may not lower oom_score_adj
    restrict_oom_score_adj = true
    # pod network namespaces are pinned under the node's state directory, not /run/netns
    netns_mounts_under_state_dir = true
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'runc'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = 'io.containerd.runc.v2'
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          SystemdCgroup = false
          BinaryName = '/usr/sbin/runc'
          Root = %q
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ['/usr/lib/cni']
      conf_dir = %q
  [plugins.'io.containerd.grpc.v1.cri']
    stream_server_address = '127.0.0.1'
    stream_server_port = '0'
  # NRI's socket is one path for the whole machine (/var/run/nri/nri.sock): nodes starting side by
  # side would race for it and one containerd exits. The harness runs no NRI plugin.
  [plugins.'io.containerd.nri.v1.nri']
    disable = true
`, filepath.Join(n.dir, "root"), filepath.Join(n.run, "state"), n.socket(), n.socket()+".ttrpc", PauseImage,
		filepath.Join(n.run, "runc"), filepath.Join(n.dir, "cni"))
}

// startKubelet starts the kubelet in containerd's namespaces, with a bridge CNI for its pods.
func (n *RealNode) startKubelet(labels map[string]string, idx int) error {
	tools, err := LocateTools(ToolKubelet)
	if err != nil {
		return err
	}
	cni := fmt.Sprintf(`{"cniVersion": "1.0.0", "name": "pods", "plugins": [
 {"type": "bridge", "bridge": "cni0", "isGateway": true, "isDefaultGateway": true, "ipMasq": false, "hairpinMode": true,
  "ipam": {"type": "host-local", "ranges": [[{"subnet": %q}]], "dataDir": %q}},
 {"type": "portmap", "capabilities": {"portMappings": true}}]}`, podCIDR(idx), filepath.Join(n.dir, "cni-ipam"))
	if err := os.WriteFile(filepath.Join(n.dir, "cni", "10-bridge.conflist"), []byte(cni), 0o644); err != nil {
		return err
	}
	kc, err := n.cp.Kubeconfig("system:node:"+n.Name, "system:nodes", "system:masters")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(n.dir, "kubelet.kubeconfig"), kc, 0o600); err != nil {
		return err
	}
	// syncFrequency 10s (default 1m): a renewed certificate reaches a router's projected volume at
	// the kubelet's next pod sync, and specs that wait for one would otherwise wait a minute each.
	cfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
failSwapOn: false
cgroupDriver: cgroupfs
cgroupRoot: %q
containerRuntimeEndpoint: unix://%s
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
readOnlyPort: 0
address: %s
port: 10250
healthzBindAddress: 127.0.0.1
healthzPort: 10248
podLogsDir: %q
resolvConf: ""
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "50Mi", nodefs.available: "1%%", imagefs.available: "1%%", nodefs.inodesFree: "1%%"}
registerNode: true
providerID: %q
syncFrequency: 10s
`, n.cgroup, n.socket(), n.IP, filepath.Join(n.dir, "pod-logs"), n.ProviderID())
	if err := os.WriteFile(filepath.Join(n.dir, "kubelet.yaml"), []byte(cfg), 0o644); err != nil {
		return err
	}
	var l []string
	for k, v := range labels {
		l = append(l, k+"="+v)
	}
	args := []string{"--target", fmt.Sprint(n.containerd.PID()), "--mount", "--net", "--", tools.Path(ToolKubelet),
		"--config", filepath.Join(n.dir, "kubelet.yaml"), "--kubeconfig", filepath.Join(n.dir, "kubelet.kubeconfig"),
		"--root-dir", filepath.Join(n.dir, "kubelet"), "--hostname-override", n.Name, "--node-ip", n.IP, "-v", "2"}
	if len(l) > 0 {
		args = append(args, "--node-labels", strings.Join(l, ","))
	}
	n.kubelet, err = StartProcess(n.dir, ProcessSpec{Name: "kubelet", Path: "nsenter", Args: args,
		Env: []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + n.dir}})
	return err
}

// PauseKubelet freezes (SIGSTOP) or resumes (SIGCONT) the node's kubelet: the node stops
// renewing its Lease and turns NotReady after the node-monitor grace period, while its pods keep
// running, as with a kubelet that hangs.
func (n *RealNode) PauseKubelet(pause bool) error {
	sig := syscall.SIGCONT
	if pause {
		sig = syscall.SIGSTOP
	}
	return syscall.Kill(n.kubelet.PID(), sig)
}

// ProviderID is the node's spec.providerID: the simulated cloud's instance ID (SimCloud).
func (n *RealNode) ProviderID() string { return "sim://" + n.fabric.ID + "/" + n.Name }

// Exec runs a command in the node's network namespace (as a host process would on the node).
func (n *RealNode) Exec(ctx context.Context, name string, args ...string) ([]byte, error) {
	return exec.CommandContext(ctx, "nsenter", append([]string{"--net=" + n.Netns, "--", name}, args...)...).CombinedOutput()
}

// Stop takes the node down without leaving anything: its pods' containers, the kubelet,
// containerd and its shims, mounts (they live in the node's mount namespace), cgroups and
// runtime directories. The API server is not needed.
func (n *RealNode) Stop() error {
	if n.kubelet != nil {
		_ = n.kubelet.Stop()
	}
	var errs []string
	// Containers outlive kubelet and containerd (their shims are separate processes).
	runcRoot := filepath.Join(n.run, "runc")
	if ids, err := os.ReadDir(filepath.Join(runcRoot, "k8s.io")); err == nil {
		for _, id := range ids {
			if out, err := exec.Command("/usr/sbin/runc", "--root", filepath.Join(runcRoot, "k8s.io"), "delete", "--force", id.Name()).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Sprintf("runc delete %s: %v: %s", id.Name(), err, strings.TrimSpace(string(out))))
			}
		}
	}
	killMatching(n.run) // shims name their containerd's socket
	if n.containerd != nil {
		_ = n.containerd.Stop()
	}
	for _, fw := range n.fwds {
		fw.stop()
	}
	for _, h := range append(cgroupV1Hierarchies(), filepath.Join(cgroupV1Root, "unified")) {
		if err := RemoveCgroupTree(filepath.Join(h, n.cgroup)); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if err := os.RemoveAll(n.run); err != nil {
		errs = append(errs, err.Error())
	}
	_ = os.Remove(filepath.Dir(n.run))
	if len(errs) > 0 {
		return fmt.Errorf("node %s: %s", n.Name, strings.Join(errs, "; "))
	}
	return nil
}

// cgroupV1Hierarchies are the mounted cgroup v1 controllers' directories.
func cgroupV1Hierarchies() []string {
	entries, err := os.ReadDir(cgroupV1Root)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "unified" {
			out = append(out, filepath.Join(cgroupV1Root, e.Name()))
		}
	}
	return out
}

// RemoveCgroupTree removes a cgroup and its children, deepest first (cgroup directories are
// removed with rmdir once empty of processes). A killed process stays a member until the kernel
// has finished it, so each directory is retried for up to five seconds.
func RemoveCgroupTree(dir string) error {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := RemoveCgroupTree(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	var last error
	for range 50 { // a cgroup empties a moment after its last process exits
		if last = os.Remove(dir); last == nil || os.IsNotExist(last) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("remove cgroup %s: %w", dir, last)
}

// KillCgroupTree SIGKILLs every process in a cgroup and its children: what a killed containerd
// left running (a pause container, a router) keeps the cgroup from being removed.
func KillCgroupTree(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, walkErr error) error {
		if walkErr == nil && !d.IsDir() && d.Name() == "cgroup.procs" {
			b, _ := os.ReadFile(p)
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		return nil // a part that cannot be read is left; removing the cgroup says so
	})
}

// killMatching SIGKILLs every process whose command line mentions s.
func killMatching(s string) {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), s) {
			continue
		}
		var pid int
		if _, err := fmt.Sscanf(filepath.Base(filepath.Dir(p)), "%d", &pid); err == nil && pid != os.Getpid() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// WaitPodsGone waits until no pod is bound to the node (after deletions through the API).
func (n *RealNode) WaitPodsGone(ctx context.Context) error {
	return waitFor(ctx, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := n.cp.Client.List(ctx, pods, client.MatchingFields{"spec.nodeName": n.Name}); err != nil {
			return false, nil //nolint:nilerr // retry
		}
		return len(pods.Items) == 0, nil
	})
}

// SetLink takes the node's eth0 (its link to the fabric) down or up: a NIC or cable failure.
// The node keeps its path to the API server (the harness forwards it inside the namespace).
func (n *RealNode) SetLink(up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	return ip("-n", filepath.Base(n.Netns), "link", "set", "eth0", state)
}

// Runs reports whether process pid lives in the node's network namespace (a host-network
// container of one of its pods, or its kubelet).
func (n *RealNode) Runs(pid int) bool {
	want, err1 := os.Stat(n.Netns)
	got, err2 := os.Stat(fmt.Sprintf("/proc/%d/ns/net", pid))
	return err1 == nil && err2 == nil && os.SameFile(want, got)
}
