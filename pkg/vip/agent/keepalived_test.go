package agent

import (
	"context"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardgate/shardgate/pkg/vip"
)

// fakeKeepalived stands in for keepalived in the supervisor's unit tests (the failover tests and
// TestVIP run the real one): this test binary, run with fakeKeepalivedEnv naming its log, records
// its start and every SIGHUP there. Go, not a shell script: a shell cannot trap a signal that was
// ignored when it started (a test run under nohup ignores SIGHUP), keepalived and Go can.
func fakeKeepalived(t *testing.T, _ string) (bin, logFile string) {
	t.Helper()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	logFile = filepath.Join(t.TempDir(), "calls")
	t.Setenv(fakeKeepalivedEnv, logFile)
	return bin, logFile
}

const fakeKeepalivedEnv = "SHARDGATE_FAKE_KEEPALIVED_LOG"

func TestMain(m *testing.M) {
	if logFile := os.Getenv(fakeKeepalivedEnv); logFile != "" && slices.Contains(os.Args, "--vrrp") {
		runFakeKeepalived(logFile)
		return
	}
	os.Exit(m.Run())
}

func runFakeKeepalived(logFile string) {
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGHUP, syscall.SIGTERM)
	note := func(what string) {
		f, err := os.OpenFile(logFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			os.Exit(2)
		}
		_, _ = f.WriteString(what + "\n")
		_ = f.Close()
	}
	note("started")
	for s := range signals {
		if s == syscall.SIGTERM {
			os.Exit(0)
		}
		note("hup")
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Errorf("not within 5s: %s", what)
	t.FailNow()
}

func called(calls string) string { b, _ := os.ReadFile(calls); return string(b) }

// supervise runs k until the test ends (keepalived stopped before the directories go).
func supervise(t *testing.T, k Keepalived) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- k.Supervise(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("supervisor: %v", err)
		}
	})
}

// TestKeepalivedRunsOnlyWhatTheAgentWrote: keepalived's container (no API token) starts keepalived
// only once the agent wrote a configuration, reloads it when the agent writes another, says which
// one runs by its digest (a poll after it signalled keepalived), and never follows a link.
func TestKeepalivedRunsOnlyWhatTheAgentWrote(t *testing.T) {
	agentDir, run, tools := t.TempDir(), t.TempDir(), t.TempDir()
	bin, calls := fakeKeepalived(t, tools)
	if err := writeHealth(filepath.Join(agentDir, healthFile), true); err != nil {
		t.Fatal(err)
	}
	supervise(t, Keepalived{Binary: bin, NodeName: "n1", NodeIP: netip.MustParseAddr("127.0.0.1"), RunDir: run,
		AgentDir: agentDir, Poll: 20 * time.Millisecond})
	read := func(name string) string { b, _ := os.ReadFile(filepath.Join(run, name)); return string(b) }
	time.Sleep(300 * time.Millisecond)
	if read(loadedFile) != "" || called(calls) != "" {
		t.Fatalf("keepalived started before the agent allowed it: %q %q", read(loadedFile), called(calls))
	}
	if entry := read(entryFile); !strings.Contains(entry, "include "+filepath.Join(run, activeFile)) ||
		!strings.Contains(entry, vip.InterfaceVariable+"=lo") {
		t.Errorf("entry configuration: %q", entry)
	}
	want := func(c string) {
		if err := writeWanted(agentDir, Rendered{Config: c}); err != nil {
			t.Fatal(err)
		}
	}
	runs := func(c string, calls_ string) func() bool {
		return func() bool {
			return called(calls) == calls_ && loadedDigest(run) == digest([]byte(c)) && read(activeFile) == c
		}
	}
	want("config A\n")
	waitFor(t, "keepalived started with A", runs("config A\n", "started\n"))
	want("config B\n")
	waitFor(t, "keepalived reloaded with B", runs("config B\n", "started\nhup\n"))
	// A link in the agent's place is not read.
	other := filepath.Join(tools, "other.conf")
	if err := os.WriteFile(other, []byte("config C\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(agentDir, wantFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, filepath.Join(agentDir, wantFile)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if got := read(activeFile); got != "config B\n" || strings.Count(called(calls), "hup") != 1 {
		t.Errorf("a linked configuration was loaded: active %q, calls %q", got, called(calls))
	}
	// And the supervisor still follows the agent.
	want("config D\n")
	waitFor(t, "keepalived reloaded with D", runs("config D\n", "started\nhup\nhup\n"))
}

// TestTheAgentReadsNoLinkedDigest: the digest keepalived's container writes is read only from a
// regular file of digest size; a link (to the agent's token, say) reads as nothing.
func TestTheAgentReadsNoLinkedDigest(t *testing.T) {
	run := t.TempDir()
	d := digest([]byte("x"))
	target := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(target, []byte(d+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(run, loadedFile)); err != nil {
		t.Fatal(err)
	}
	if got := loadedDigest(run); got != "" {
		t.Errorf("read through a link: %q", got)
	}
	for content, want := range map[string]string{d + "\n": d, "not a digest\n": "", strings.Repeat("a", 200): ""} {
		if err := os.Remove(filepath.Join(run, loadedFile)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(run, loadedFile), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := loadedDigest(run); got != want {
			t.Errorf("loaded %q read as %q, want %q", content, got, want)
		}
	}
}

// TestARestartedAgentKeepsFeedingKeepalived: an agent restarted in a pod whose keepalived already
// runs (its configuration in the run directory) does not wait for its peers again, which could
// hold a running keepalived's reloads back: it writes the new configuration at once and reports
// keepalived running once keepalived's container says it loaded it.
func TestARestartedAgentKeepsFeedingKeepalived(t *testing.T) {
	old := "vrrp_instance edge_0 {\n@n3  priority 200\n}\n"
	latest := "vrrp_instance edge_0 {\n@n1  priority 200\n@n3  priority 199\n}\n"
	agentDir, keepalivedDir := pod(t, old, "", digest([]byte(old)))
	dir := t.TempDir()
	conf := filepath.Join(dir, "keepalived.conf")
	if err := os.WriteFile(conf, []byte(latest), 0o644); err != nil {
		t.Fatal(err)
	}
	cs, rep := peerRunning(t, "n1", "n1", "n2") // n1 runs a configuration without n3
	runAgent(t, Options{Source: Files{Config: conf}, NodeName: "n3", NodeIP: netip.MustParseAddr("127.0.0.1"),
		AgentDir: agentDir, KeepalivedDir: keepalivedDir, RouterURL: "http://127.0.0.1:1/",
		ProbeInterval: 50 * time.Millisecond, ReloadCheck: 20 * time.Millisecond, Reporter: rep})
	read := func() string { b, _ := os.ReadFile(filepath.Join(agentDir, wantFile)); return string(b) }
	waitFor(t, "the latest configuration written for keepalived", func() bool { return read() == latest })
	if err := writeFile(filepath.Join(keepalivedDir, loadedFile), digest([]byte(latest))+"\n"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "n3 reported running the latest configuration", func() bool {
		r, ok := report(context.Background(), cs, "n3")
		return ok && r.Config == digest([]byte(latest)) && strings.Join(r.Peers, ",") == "n1,n3"
	})
}
