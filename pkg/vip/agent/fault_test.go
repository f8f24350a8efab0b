package agent

// What leaving FAULT, a stepped clock and a restarted keepalived must not cost (the second
// attacker's review of security item 23: each test failed on b4389e3).

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/shardgate/shardgate/pkg/vip"
)

const (
	withoutN3 = "vrrp_instance edge_0 {\n@n1  priority 200\n@n2  priority 199\n}\n"
	withN3    = "vrrp_instance edge_0 {\n@n1  priority 200\n@n2  priority 199\n@n3  priority 198\n}\n"
)

func readIn(dir, name string) string {
	b, _ := os.ReadFile(filepath.Join(dir, name))
	return string(b)
}

func answeringRouter(t *testing.T) string {
	router := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(router.Close)
	return router.URL
}

// Leaving FAULT is a start: keepalived goes from "holds nothing, sends nothing" to taking back
// every VIP it is home for. n1's agent died, keepalived faulted (as designed), n1's report
// lapsed, and n3 joined meanwhile (vip.MayStart rightly ignored n1). n1's agent restarts (the
// resumed path) while the API server does not answer it yet: its first health write ends the
// FAULT at once, and keepalived runs the configuration the dead agent left, which sends n1's
// adverts to n1 and n2 only. n3 never hears n1 and keeps the VIPs n1 takes back: a split, until
// the agent reads the ConfigMap (never, while the API server stays unreachable from n1).
func TestAFaultedNodeRejoinsOnlyWithItsCurrentPeers(t *testing.T) {
	agentDir, keepalivedDir := pod(t, withoutN3, "192.0.2.10 7\n", digest([]byte(withoutN3)))
	old := time.Now().Add(-time.Minute) // the agent has been dead for a minute
	if err := os.Chtimes(filepath.Join(agentDir, healthFile), old, old); err != nil {
		t.Fatal(err)
	}
	bin, calls := fakeKeepalived(t, t.TempDir())
	supervise(t, Keepalived{Binary: bin, NodeName: "n1", NodeIP: netip.MustParseAddr("127.0.0.1"), RunDir: keepalivedDir,
		AgentDir: agentDir, Poll: 50 * time.Millisecond})
	waitFor(t, "keepalived runs the old configuration, in FAULT while its agent is dead", func() bool {
		return called(calls) == "started\n" && readIn(keepalivedDir, aliveFile) == "1\n" &&
			loadedDigest(keepalivedDir) == digest([]byte(withoutN3))
	})
	// The ConfigMap names n3 now; n1's agent cannot read it yet.
	src := slowSource{ready: time.Now().Add(time.Hour), r: Rendered{Config: withN3, VIPs: "192.0.2.10 7\n"}}
	runAgent(t, Options{Source: src, NodeName: "n1", NodeIP: netip.MustParseAddr("127.0.0.1"),
		AgentDir: agentDir, KeepalivedDir: keepalivedDir, RouterURL: answeringRouter(t),
		ProbeInterval: 100 * time.Millisecond, ReloadCheck: 200 * time.Millisecond})
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		active := readIn(keepalivedDir, activeFile)
		if readIn(keepalivedDir, aliveFile) == "0\n" && !slices.Contains(vip.ConfigNodes(active), "n3") {
			t.Fatalf("keepalived left FAULT running a configuration without n3 (nodes %v) before the restarted agent "+
				"read its ConfigMap: n1 takes back the VIPs n3 holds and never advertises to n3", vip.ConfigNodes(active))
		}
	}
}

// keepalived reads each tracked file and only then adds its inotify watch (init_track_files, at
// every start and reload), so a write between the two is never seen: TestKeepalivedFailover hit
// this in CI with the health file (6731535), and the agent now rewrites that file every second.
// The supervisor writes the alive file only when it changes. keepalived starts with "1" whenever
// the agent waited more than agentSilence in waitToStart (a joining node, a shard without VIPs
// yet: the agent writes no health meanwhile), and the agent's first probe a moment later makes it
// "0": if that one write falls in the window, keepalived stays in FAULT for good (until a reload),
// on a node whose agent and router are fine, and nothing says so.
//
// The fake keepalived below reads the alive file, then watches it (inode and ctime) from 300 ms
// later: the window is widened so the test is deterministic.
func TestKeepalivedThatMissedTheAgentsReturnLeavesFault(t *testing.T) {
	agentDir, run, tools := t.TempDir(), t.TempDir(), t.TempDir()
	view, calls := filepath.Join(tools, "view"), filepath.Join(tools, "calls")
	bin := filepath.Join(tools, "keepalived")
	script := `#!/bin/sh
dir=
while [ $# -gt 0 ]; do [ "$1" = --use-file ] && dir=$(dirname "$2"); shift; done
read_alive() { cp "$dir/agent-alive" "` + view + `.tmp" && mv "` + view + `.tmp" "` + view + `"; }
read_alive
echo started >> "` + calls + `"
sleep 0.3
seen=$(stat -c '%i %z' "$dir/agent-alive")
trap 'exit 0' TERM
while :; do
  now=$(stat -c '%i %z' "$dir/agent-alive" 2>/dev/null)
  if [ "$now" != "$seen" ]; then seen=$now; read_alive; fi
  sleep 0.02
done
`
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	health := filepath.Join(agentDir, healthFile)
	if err := writeHealth(health, false); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-10 * time.Second) // the agent waited 10 s for its peers
	if err := os.Chtimes(health, old, old); err != nil {
		t.Fatal(err)
	}
	if err := writeWanted(agentDir, Rendered{Config: withoutN3}); err != nil {
		t.Fatal(err)
	}
	supervise(t, Keepalived{Binary: bin, NodeName: "n1", NodeIP: netip.MustParseAddr("127.0.0.1"), RunDir: run,
		AgentDir: agentDir, Poll: 20 * time.Millisecond})
	waitFor(t, "keepalived started", func() bool { return called(calls) == "started\n" })
	// The agent's probe loop: the router answers, and the health file is written every second.
	beat(t, health)
	time.Sleep(2500 * time.Millisecond)
	if got, _ := os.ReadFile(view); string(got) != "0\n" || readIn(run, aliveFile) != "0\n" {
		t.Errorf("keepalived sees agent_alive %q (the file says %q): it stays in FAULT with its agent alive, "+
			"because the one write it missed is never repeated", got, readIn(run, aliveFile))
	}
}

// The agent's heartbeat is judged by the health file's modification time against the wall
// clock. A clock stepped back (NTP correcting a clock that ran ahead) dates the last write in
// the future: an agent that dies then is "alive" until the clock catches up, an hour here, and
// keepalived outlives it again (the first review's finding). Stepped forward by more than about
// 1.6 s, every live agent on the node looks silent: every VIP on it fails over and back.
func TestASilentAgentFaultsWhateverTheClockSays(t *testing.T) {
	start := func(t *testing.T) (health, run string) {
		agentDir, tools := t.TempDir(), t.TempDir()
		run = t.TempDir()
		bin, calls := fakeKeepalived(t, tools)
		health = filepath.Join(agentDir, healthFile)
		if err := writeHealth(health, true); err != nil {
			t.Fatal(err)
		}
		if err := writeWanted(agentDir, Rendered{Config: withoutN3}); err != nil {
			t.Fatal(err)
		}
		supervise(t, Keepalived{Binary: bin, NodeName: "n1", NodeIP: netip.MustParseAddr("127.0.0.1"), RunDir: run,
			AgentDir: agentDir, Poll: 20 * time.Millisecond})
		waitFor(t, "keepalived started, its agent alive", func() bool {
			return called(calls) == "started\n" && readIn(run, aliveFile) == "0\n"
		})
		return health, run
	}
	t.Run("stepped back, the agent dies", func(t *testing.T) {
		health, run := start(t)
		future := time.Now().Add(time.Hour) // the last write, as the stepped-back clock dates it
		if err := os.Chtimes(health, future, future); err != nil {
			t.Fatal(err)
		}
		time.Sleep(agentSilence + time.Second)
		if got := readIn(run, aliveFile); got != "1\n" {
			t.Errorf("the agent has been silent for %s and keepalived is not in FAULT (agent-alive %q)", agentSilence+time.Second, got)
		}
	})
	t.Run("stepped forward, the agent lives", func(t *testing.T) {
		health, run := start(t)
		beat(t, health) // the agent writes every second, as it does
		time.Sleep(100 * time.Millisecond)
		// The clock steps 5 s forward: the last write is 5 s old on the new clock.
		past := time.Now().Add(-5 * time.Second)
		if err := os.Chtimes(health, past, past); err != nil {
			t.Fatal(err)
		}
		for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
			if readIn(run, aliveFile) == "1\n" {
				t.Fatal("keepalived faulted (every VIP on the node fails over and back) while its agent writes every second")
			}
		}
	})
}

// After a restart of keepalived's container the supervisor removes "loaded" and starts a new
// keepalived at once with the configuration the agent left (no peer check), then says what it
// loaded a poll later; meanwhile the agent reports "keepalived does not run, holds nothing", and
// vip.MayStart ignores n1 while it runs. A joining node may start on that report against a
// keepalived whose configuration does not name it yet (the agent writes the ConfigMap's latest
// within a reload check). Poll and reload check are chosen here so that the window always opens
// (in a pod, 200 ms and 1 s: about one keepalived restart in five, for up to a second).
func TestARestartedKeepalivedIsNeverReportedStopped(t *testing.T) {
	agentDir, keepalivedDir := pod(t, withoutN3, "192.0.2.10 7\n", digest([]byte(withoutN3)))
	bin, calls := fakeKeepalived(t, t.TempDir())
	k := Keepalived{Binary: bin, NodeName: "n1", NodeIP: netip.MustParseAddr("127.0.0.1"), RunDir: keepalivedDir,
		AgentDir: agentDir, Poll: 300 * time.Millisecond}
	container := func() (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = k.Supervise(ctx) }()
		return func() { cancel(); <-done }
	}
	stop := container()
	conf := configFile(t, withoutN3)
	writes := reportingAgent(t, Options{Source: Files{Config: conf}, NodeName: "n1", NodeIP: netip.MustParseAddr("127.0.0.1"),
		AgentDir: agentDir, KeepalivedDir: keepalivedDir, RouterURL: answeringRouter(t),
		ProbeInterval: 50 * time.Millisecond, ReloadCheck: 50 * time.Millisecond})
	waitFor(t, "n1 reports running", func() bool {
		w := writes()
		return called(calls) == "started\n" && len(w) > 0 && w[len(w)-1].Running()
	})
	before := len(writes())
	stop() // keepalived's container restarts
	stop = container()
	defer func() { stop() }()
	waitFor(t, "keepalived started again and reported", func() bool {
		w := writes()
		return called(calls) == "started\nstarted\n" && loadedDigest(keepalivedDir) != "" && len(w) > before && w[len(w)-1].Running()
	})
	time.Sleep(200 * time.Millisecond)
	for _, r := range writes()[before:] {
		if !r.Running() {
			r.Expires = time.Now().Add(time.Minute)
			ok, _ := vip.MayStart("n3", vip.ConfigNodes(withN3), map[string]vip.NodeReport{"n1": r}, time.Now())
			t.Errorf("across a restart of keepalived's container (the new keepalived running within milliseconds), n1 "+
				"reported that keepalived does not run (held %v): n3 may start: %v", r.Held, ok)
		}
	}
}

// docs/security.md: a compromised keepalived "makes the agent say" at most "running, no peer
// known". Anything in "loaded" that is not a digest, or no file once there was one, reads as
// "keepalived does not run", which vip.MayStart skips (while no VIP is on the interface): the
// node no longer holds joining routers back.
func TestKeepalivedsContainerCannotMakeTheAgentSayNothingRuns(t *testing.T) {
	for _, tc := range []struct {
		name  string
		forge func(keepalivedDir string) error
	}{
		{"not a digest", func(d string) error { return writeFile(filepath.Join(d, loadedFile), "not a digest\n") }},
		{"removed", func(d string) error { return os.Remove(filepath.Join(d, loadedFile)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			agentDir, keepalivedDir := pod(t, withoutN3, "192.0.2.10 7\n", digest([]byte(withoutN3)))
			conf := configFile(t, withoutN3)
			writes := reportingAgent(t, Options{Source: Files{Config: conf}, NodeName: "n1", NodeIP: netip.MustParseAddr("127.0.0.1"),
				AgentDir: agentDir, KeepalivedDir: keepalivedDir, RouterURL: answeringRouter(t),
				ProbeInterval: 50 * time.Millisecond, ReloadCheck: 100 * time.Millisecond})
			waitFor(t, "n1 reports running", func() bool { w := writes(); return len(w) > 0 && w[len(w)-1].Running() })
			if err := tc.forge(keepalivedDir); err != nil {
				t.Fatal(err)
			}
			time.Sleep(600 * time.Millisecond)
			all := writes()
			if last := all[len(all)-1]; !last.Running() {
				t.Errorf("keepalived's container made the agent say keepalived does not run: %+v", last)
			}
		})
	}
}

// beat writes a healthy router into health every second until the test ends, as the agent does.
func beat(t *testing.T, health string) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			_ = writeHealth(health, true)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}
