package agent_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shardgate/shardgate/pkg/vip"
	"github.com/shardgate/shardgate/test/framework"
)

// lan is two or more hosts on one L2 segment, each running the router stand-in (the harness'
// backend answering "hello from <host>") and the VIP agent with real keepalived, all reading one
// rendered configuration, as a VIP shard's router pods do.
type lan struct {
	t       testing.TB
	fabric  *framework.Fabric
	hosts   []*framework.Host
	routers map[string]*framework.Process
	agents  map[string]*framework.Process
	// keepaliveds are keepalived's supervisors (keepalived's container).
	keepaliveds map[string]*framework.Process
	config      string
	bins        map[string]string
	dir         string
	vips        []vip.Instance
	// multicast VRRP instead of unicast peers.
	multicast bool
}

const keepalivedBin = "/usr/sbin/keepalived"

func startLAN(t testing.TB, names []string, vips []vip.Instance, multicast bool) *lan {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces)")
	}
	if _, err := os.Stat(keepalivedBin); err != nil {
		t.Skipf("keepalived not installed (hack/install-deps.sh installs it): %v", err)
	}
	l := &lan{t: t, fabric: framework.StartFabric(t), routers: map[string]*framework.Process{}, agents: map[string]*framework.Process{},
		keepaliveds: map[string]*framework.Process{}, dir: t.TempDir(), vips: vips, bins: map[string]string{}, multicast: multicast}
	// The agent runs as uid 65532: it must reach its binary and the configuration.
	for _, d := range []string{filepath.Dir(l.dir), l.dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for name, pkg := range map[string]string{"agent": "./cmd/shardgate-vip-agent", "backend": "./test/images/backend"} {
		bin := filepath.Join(l.dir, name)
		cmd := exec.Command("go", "build", "-o", bin, pkg)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", pkg, err, out)
		}
		l.bins[name] = bin
	}
	for i, n := range names {
		h, err := l.fabric.AddHost(n, fmt.Sprintf("10.123.0.%d", 21+i))
		if err != nil {
			t.Fatal(err)
		}
		l.hosts = append(l.hosts, h)
	}
	l.config = filepath.Join(l.dir, "keepalived.conf")
	l.render(l.hosts)
	for _, h := range l.hosts {
		l.startRouter(h)
		l.startAgent(h)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, h := range l.hosts {
				if a := l.agents[h.Name]; a != nil {
					t.Logf("--- %s agent (tail) ---\n%s", h.Name, a.Tail(4000))
				}
				if k := l.keepaliveds[h.Name]; k != nil {
					t.Logf("--- %s keepalived (tail) ---\n%s", h.Name, k.Tail(4000))
				}
			}
		}
	})
	return l
}

// render writes the shard's configuration for the given hosts, as Shardgate would.
func (l *lan) render(hosts []*framework.Host) {
	var nodes []vip.Node
	for _, h := range hosts {
		nodes = append(nodes, vip.Node{Name: h.Name, Address: netip.MustParseAddr(h.IP)})
	}
	cfg, err := vip.KeepalivedConfig(vip.KeepalivedInput{Shard: "edge", Instances: l.vips, Nodes: nodes, Multicast: l.multicast,
		AdvertInterval: 100 * time.Millisecond, HealthFile: "/run/keepalived/router-health",
		AliveFile: "/run/keepalived-supervisor/agent-alive"})
	if err != nil {
		l.t.Fatal(err)
	}
	// Written whole and renamed, as the kubelet swaps a ConfigMap volume.
	tmp := l.config + ".tmp"
	if err := os.WriteFile(tmp, []byte(cfg), 0o644); err != nil {
		l.t.Fatal(err)
	}
	if err := os.Rename(tmp, l.config); err != nil {
		l.t.Fatal(err)
	}
}

func (l *lan) startRouter(h *framework.Host) {
	p, err := h.Start(framework.ProcessSpec{Name: "router", Path: l.bins["backend"], Env: []string{"NAME=" + h.Name, "PORT=80"}})
	if err != nil {
		l.t.Fatal(err)
	}
	l.routers[h.Name] = p
}

func (l *lan) stopRouter(h *framework.Host) {
	if err := l.routers[h.Name].Stop(); err != nil {
		l.t.Logf("stop router on %s: %v", h.Name, err)
	}
}

// startAgent starts a host's VIP agent and keepalived's supervisor as the router pod runs them:
// two containers, each with a mount and PID namespace of its own (when the harness stops unshare,
// the kernel kills everything in it), each writing its own directory and reading the other's
// read-only; the agent as uid 65532 without capabilities, keepalived as root.
func (l *lan) startAgent(h *framework.Host) {
	base := filepath.Join(l.dir, "pod-"+h.Name)
	agentDir, runDir := filepath.Join(base, "vip-agent"), filepath.Join(base, "keepalived")
	for _, d := range []string{base, agentDir, runDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			l.t.Fatal(err)
		}
	}
	if err := os.Chown(agentDir, 65532, 65532); err != nil {
		l.t.Fatal(err)
	}
	container := func(name, readOnly string, args ...string) *framework.Process {
		mount := `mkdir -p /run/keepalived /run/keepalived-supervisor && mount --bind "$0" /run/keepalived && ` +
			`mount --bind "$1" /run/keepalived-supervisor && mount -o remount,bind,ro ` + readOnly + ` && shift && exec "$@"`
		p, err := h.Start(framework.ProcessSpec{Name: name, Path: "/usr/bin/unshare", Args: append([]string{"--mount",
			"--propagation", "private", "--pid", "--fork", "--kill-child", "--mount-proc", "--", "sh", "-c", mount,
			agentDir, runDir}, args...)})
		if err != nil {
			l.t.Fatal(err)
		}
		return p
	}
	l.keepaliveds[h.Name] = container("keepalived", "/run/keepalived", l.bins["agent"], "keepalived", "--keepalived", keepalivedBin,
		"--node-name", h.Name, "--node-ip", h.IP)
	// --pdeathsig: a change of user clears the death signal unshare --kill-child set, and the agent
	// outlived its test.
	l.agents[h.Name] = container("agent", "/run/keepalived-supervisor", "/usr/bin/setpriv", "--reuid=65532",
		"--regid=65532", "--clear-groups", "--pdeathsig=KILL",
		l.bins["agent"], "--config", l.config, "--node-name", h.Name, "--node-ip", h.IP,
		"--router-url", "http://127.0.0.1:80/healthz", "--probe-interval", "100ms")
}

// leaf is the process at the end of pid's line of first children (the command unshare and sh
// exec in the end).
func leaf(t *testing.T, pid int) int {
	t.Helper()
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return pid
		}
		if pid, err = strconv.Atoi(f[0]); err != nil {
			t.Fatal(err)
		}
	}
}

// holder is the host whose router answers on addr (the VIP), or "".
func (l *lan) holder(ctx context.Context, addr string) string {
	code, body, err := l.fabric.GetQuick(ctx, addr+":80", "", 300*time.Millisecond)
	if err != nil || code != 200 {
		return ""
	}
	name, _, _ := strings.Cut(strings.TrimPrefix(body, "hello from "), " ")
	return name
}

func (l *lan) waitHolder(ctx context.Context, addr string, ok func(string) bool, within time.Duration) string {
	l.t.Helper()
	start := time.Now()
	for time.Since(start) < within {
		if h := l.holder(ctx, addr); h != "" && ok(h) {
			return h
		}
		time.Sleep(10 * time.Millisecond)
	}
	l.t.Fatalf("%s: no holder as wanted within %s", addr, within)
	return ""
}

// stillHeld waits up to within for h to drop addr; it returns h's addresses if it did not.
func (l *lan) stillHeld(h *framework.Host, addr string, within time.Duration) []string {
	var addrs []string
	for start := time.Now(); time.Since(start) < within; time.Sleep(20 * time.Millisecond) {
		if addrs, _ = h.Addresses(); !slices.Contains(addrs, addr) {
			return nil
		}
	}
	return addrs
}

// loop sends requests to addr every 20 ms until stop; it counts requests and failures.
func (l *lan) loop(ctx context.Context, addr string) func() (int, int) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var n, failed int
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			n++
			if l.holder(ctx, addr) == "" && ctx.Err() == nil {
				failed++
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return func() (int, int) { cancel(); wg.Wait(); return n, failed }
}

func is(name string) func(string) bool { return func(h string) bool { return h == name } }

// TestKeepalivedFailover runs real keepalived through the agent with Shardgate's rendered
// configuration on two hosts: two VIPs are mastered on different hosts; a router that stops
// answering (its node still up) and a host whose link goes down each lose their VIP to the other
// host; a configuration change (a third host joining the peers) reloads keepalived without
// moving a VIP or failing a request.
func TestKeepalivedFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts keepalived in network namespaces")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	vips := []vip.Instance{{VIP: netip.MustParseAddr("10.123.0.100"), RouterID: 51}, {VIP: netip.MustParseAddr("10.123.0.101"), RouterID: 52}}
	l := startLAN(t, []string{"n1", "n2"}, vips, false)
	v0, v1 := vips[0].VIP.String(), vips[1].VIP.String()

	h0 := l.waitHolder(ctx, v0, is("n1"), 30*time.Second)
	h1 := l.waitHolder(ctx, v1, is("n2"), 30*time.Second)
	t.Logf("masters spread: %s on %s, %s on %s", v0, h0, v1, h1)

	t.Run("a router that stops answering loses its VIP", func(t *testing.T) {
		stop := l.loop(ctx, v0)
		start := time.Now()
		l.stopRouter(l.hosts[0])
		l.waitHolder(ctx, v0, is("n2"), 10*time.Second)
		took := time.Since(start)
		time.Sleep(200 * time.Millisecond)
		n, failed := stop()
		t.Logf("router stopped on n1: %s answered by n2 after %s; client: %d requests, %d failed", v0, took.Round(time.Millisecond), n, failed)
		// keepalived takes the address off as it leaves MASTER, which on a loaded machine can come
		// a moment after n2 answers; it must come.
		if addrs := l.stillHeld(l.hosts[0], v0, 2*time.Second); addrs != nil {
			t.Errorf("n1 still holds %s 2 s after its router stopped: %v", v0, addrs)
		}
		// The router comes back: n1 is the VIP's home and takes it back.
		l.startRouter(l.hosts[0])
		l.waitHolder(ctx, v0, is("n1"), 10*time.Second)
	})

	t.Run("a host whose link goes down loses its VIP", func(t *testing.T) {
		start := time.Now()
		if err := l.hosts[1].SetLink(false); err != nil {
			t.Fatal(err)
		}
		l.waitHolder(ctx, v1, is("n1"), 10*time.Second)
		took := time.Since(start)
		t.Logf("link down on n2: %s answered by n1 after %s", v1, took.Round(time.Millisecond))
		if err := l.hosts[1].SetLink(true); err != nil {
			t.Fatal(err)
		}
		l.waitHolder(ctx, v1, is("n2"), 15*time.Second)
	})

	t.Run("a host whose agent stops loses its VIP", func(t *testing.T) {
		// The agent hangs (SIGSTOP): its report lapses, so keepalived must hold nothing either.
		agent := leaf(t, l.agents["n1"].PID())
		start := time.Now()
		if err := syscall.Kill(agent, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = syscall.Kill(agent, syscall.SIGCONT) }()
		l.waitHolder(ctx, v0, is("n2"), 10*time.Second)
		t.Logf("agent stopped on n1: %s answered by n2 after %s", v0, time.Since(start).Round(time.Millisecond))
		if err := syscall.Kill(agent, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		l.waitHolder(ctx, v0, is("n1"), 10*time.Second)
	})

	t.Run("a peer change reloads keepalived without moving a VIP", func(t *testing.T) {
		stop0, stop1 := l.loop(ctx, v0), l.loop(ctx, v1)
		n3, err := l.fabric.AddHost("n3", "10.123.0.23")
		if err != nil {
			t.Fatal(err)
		}
		l.render(append(slices.Clone(l.hosts), n3))
		deadline := time.Now().Add(10 * time.Second)
		for _, h := range l.hosts {
			for !strings.Contains(l.keepaliveds[h.Name].Tail(4000), "keepalived reloaded") {
				if time.Now().After(deadline) {
					t.Fatalf("%s: keepalived not reloaded", h.Name)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		time.Sleep(time.Second)
		n0, f0 := stop0()
		n1, f1 := stop1()
		t.Logf("reload: %d+%d requests, %d+%d failed", n0, n1, f0, f1)
		if f0+f1 > 0 {
			t.Errorf("requests failed across a reload: %d of %d, %d of %d", f0, n0, f1, n1)
		}
		if a, b := l.holder(ctx, v0), l.holder(ctx, v1); a != "n1" || b != "n2" {
			t.Errorf("VIPs moved on reload: %s on %q, %s on %q", v0, a, v1, b)
		}
	})
}

// BenchmarkKeepalivedFailover prints the failover time of a VIP (the moment its holder fails to
// the first answer from the other host, seen by a client on the segment) over 10 router stops and
// 10 link failures, and the requests a client looping every 20 ms saw fail meanwhile.
func BenchmarkKeepalivedFailover(b *testing.B) {
	const rounds = 10
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for range b.N {
		vips := []vip.Instance{{VIP: netip.MustParseAddr("10.123.0.100"), RouterID: 51}}
		l := startLAN(b, []string{"n1", "n2"}, vips, false)
		v := vips[0].VIP.String()
		l.waitHolder(ctx, v, is("n1"), 30*time.Second)
		for _, mode := range []string{"router stopped", "link down"} {
			var took []time.Duration
			var sent, failed int
			for range rounds {
				// n1 is the VIP's home: it holds it again after each round.
				l.waitHolder(ctx, v, is("n1"), 15*time.Second)
				time.Sleep(500 * time.Millisecond)
				stop := l.loop(ctx, v)
				start := time.Now()
				if mode == "router stopped" {
					l.stopRouter(l.hosts[0])
				} else if err := l.hosts[0].SetLink(false); err != nil {
					b.Fatal(err)
				}
				l.waitHolder(ctx, v, is("n2"), 10*time.Second)
				took = append(took, time.Since(start))
				n, f := stop()
				sent, failed = sent+n, failed+f
				if mode == "router stopped" {
					l.startRouter(l.hosts[0])
				} else if err := l.hosts[0].SetLink(true); err != nil {
					b.Fatal(err)
				}
			}
			slices.Sort(took)
			p50, p99 := took[len(took)/2], took[len(took)-1]
			metric := strings.ReplaceAll(mode, " ", "-")
			b.ReportMetric(p50.Seconds()*1000, metric+"-p50-ms")
			b.ReportMetric(p99.Seconds()*1000, metric+"-p99-ms")
			fmt.Printf("keepalived failover (%s): p50 %s p99 %s over %d failovers; looping client: %d of %d requests failed\n",
				mode, p50.Round(time.Millisecond), p99.Round(time.Millisecond), rounds, failed, sent)
		}
	}
}

// TestKeepalivedMulticast: with vrrp Multicast the same configuration (no peers) elects one
// holder on the segment and fails over when its router stops answering.
func TestKeepalivedMulticast(t *testing.T) {
	if testing.Short() {
		t.Skip("starts keepalived in network namespaces")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	vips := []vip.Instance{{VIP: netip.MustParseAddr("10.123.0.110"), RouterID: 61}}
	l := startLAN(t, []string{"m1", "m2"}, vips, true)
	v := vips[0].VIP.String()
	l.waitHolder(ctx, v, is("m1"), 30*time.Second)
	if cfg, _ := os.ReadFile(l.config); strings.Contains(string(cfg), "unicast_peer") {
		t.Fatal("multicast configuration lists unicast peers")
	}
	start := time.Now()
	l.stopRouter(l.hosts[0])
	l.waitHolder(ctx, v, is("m2"), 10*time.Second)
	t.Logf("multicast: %s moved to m2 %s after its router on m1 stopped", v, time.Since(start).Round(time.Millisecond))
}
