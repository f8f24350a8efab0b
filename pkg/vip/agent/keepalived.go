package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/shardgate/shardgate/pkg/vip"
)

// The agent and keepalived run in two containers of the router pod. The agent holds the router's
// API token and no capability; keepalived holds NET_ADMIN and NET_RAW and no token (security item
// 23). They speak through files in two directories, each written by one side and mounted
// read-only into the other (a file one side could replace in the other's directory would let a
// compromised keepalived forge what the agent reports, or stop it writing):
//
// The agent's directory:
//   - wantFile: the configuration keepalived should run. The agent writes it first only once its
//     peers run a configuration naming this node (vip.MayStart), so its presence is keepalived's
//     permission to start; vipsFile beside it is the VIP list that came with it.
//   - healthFile (the configuration's track_file), written before wantFile and again at least
//     every second: whether the router answers, and by its age whether the agent is alive.
//
// keepalived's directory:
//   - entryFile and activeFile: keepalived's entry configuration (the node's interface, then an
//     include of activeFile), and the copy of wantFile keepalived reads, so what it loads is
//     exactly what the supervisor hashed.
//   - loadedFile: the SHA-256 of the configuration keepalived was last started or reloaded with
//     (written before the start, a poll after each reload; never removed); the agent reports it,
//     so peers know what this node runs.
//   - aliveFile (a track_file of weight 0), rewritten every second: 1 once the agent's health
//     file has not changed for agentSilence, which puts keepalived in FAULT (no VIP held, no
//     advert sent); 0 again when the agent writes, which it does only once keepalived may run.
const (
	wantFile   = "rendered.conf"
	vipsFile   = "vips"
	healthFile = "router-health"
	entryFile  = "keepalived.conf"
	activeFile = "active.conf"
	loadedFile = "loaded"
	aliveFile  = "agent-alive"
	// maxConfigBytes bounds what either side reads from the other: a ConfigMap holds at most 1 MiB.
	maxConfigBytes = 1 << 20
	// agentSilence: the agent rewrites its health file every second; silent this long, it is gone
	// (well within the leaseSeconds its report lives).
	agentSilence = 3 * time.Second
	// reloadAfterStart: keepalived is not signalled sooner after its start.
	reloadAfterStart = time.Second
)

// Keepalived supervises keepalived in its own container: it starts keepalived once the agent wrote
// the configuration to run, reloads it (SIGHUP) when the agent writes another, says which one
// runs, and faults it while the agent is silent. It never calls the API.
type Keepalived struct {
	Binary   string
	NodeName string // keepalived's config id: selects the node's own "@<node>" lines
	NodeIP   netip.Addr
	RunDir   string // keepalived's directory, its own
	AgentDir string // the agent's directory, read only
	// Poll: how often the wanted configuration and the agent's heartbeat are read.
	Poll time.Duration
}

// Supervise runs keepalived until ctx ends or keepalived exits.
func (k Keepalived) Supervise(ctx context.Context) error {
	iface, err := InterfaceOf(k.NodeIP)
	if err != nil {
		return err
	}
	def := fmt.Sprintf("%s=%s\ninclude %s\n", vip.InterfaceVariable, iface, filepath.Join(k.RunDir, activeFile))
	if err := writeFile(filepath.Join(k.RunDir, entryFile), def); err != nil {
		return err
	}
	config, err := k.waitForConfig(ctx)
	if err != nil {
		return err
	}
	beat := &heartbeat{}
	alive := beat.alive(k.AgentDir)
	if err := k.writeAlive(alive); err != nil {
		return err
	}
	aliveWritten := time.Now()
	// Said before keepalived starts (a restarted container's keepalived must never read as
	// "nothing runs" while it does), and again a poll after each reload.
	if err := writeFile(filepath.Join(k.RunDir, loadedFile), digest(config)+"\n"); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, k.Binary, "--vrrp", "--dont-fork", "--log-console", "--log-detail",
		"--use-file", filepath.Join(k.RunDir, entryFile), "--config-id", k.NodeName,
		"--pid", filepath.Join(k.RunDir, "keepalived.pid"), "--vrrp_pid", filepath.Join(k.RunDir, "vrrp.pid"),
		"--checkers_pid", filepath.Join(k.RunDir, "checkers.pid"))
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start keepalived: %w", err)
	}
	started := time.Now()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	log.Printf("keepalived started on %s (%s) as %s", iface, k.NodeIP, k.NodeName)
	poll := time.NewTicker(k.Poll)
	defer poll.Stop()
	unsaid := false
	for {
		select {
		case err := <-exited:
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("keepalived exited: %w", err)
		case <-poll.C:
			// Written again every second, as the agent writes its health: keepalived reads a
			// tracked file before it watches it, at every start and reload, and misses a change
			// that falls in between.
			if a := beat.alive(k.AgentDir); rewriteDue(a, alive, time.Since(aliveWritten)) {
				if err := k.writeAlive(a); err != nil {
					log.Printf("%v", err)
				} else {
					if a != alive {
						log.Printf("the agent is alive: %v (keepalived %s)", a, map[bool]string{true: "runs", false: "faults"}[a])
					}
					alive, aliveWritten = a, time.Now()
				}
			}
			if unsaid {
				if err := writeFile(filepath.Join(k.RunDir, loadedFile), digest(config)+"\n"); err != nil {
					log.Printf("%v", err)
					continue
				}
				unsaid = false
			}
			// A SIGHUP before keepalived has set up its handlers would end it: a change that
			// comes right after the start waits a moment.
			if time.Since(started) < reloadAfterStart {
				continue
			}
			want, err := readSmall(filepath.Join(k.AgentDir, wantFile), maxConfigBytes)
			if err != nil || len(want) == 0 || bytes.Equal(want, config) {
				continue
			}
			if err := k.activate(want); err != nil {
				log.Printf("%v", err)
				continue
			}
			if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
				log.Printf("reload keepalived: %v", err)
				continue
			}
			config, unsaid = want, true
			log.Printf("configuration changed: keepalived reloaded (nodes %v)", vip.ConfigNodes(string(config)))
		}
	}
}

// heartbeat follows the agent's health file: each write replaces it (a new inode), and the time of
// the last change seen is taken from this process' monotonic clock, so a stepped wall clock
// neither faults a live agent nor hides a dead one.
type heartbeat struct {
	seen    bool
	stamp   [3]int64 // inode, modification time, size
	changed time.Time
}

func (h *heartbeat) alive(agentDir string) bool {
	st, err := os.Lstat(filepath.Join(agentDir, healthFile))
	if err != nil || !st.Mode().IsRegular() {
		return h.observe(false, [3]int64{}, time.Time{}, time.Now())
	}
	var ino int64
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		ino = int64(sys.Ino) //nolint:gosec // an inode number, compared only
	}
	return h.observe(true, [3]int64{ino, st.ModTime().UnixNano(), st.Size()}, st.ModTime(), time.Now())
}

func (k Keepalived) writeAlive(alive bool) error {
	if alive {
		return writeFile(filepath.Join(k.RunDir, aliveFile), "0\n")
	}
	return writeFile(filepath.Join(k.RunDir, aliveFile), "1\n")
}

// waitForConfig waits for the agent's first configuration and makes it the active one.
func (k Keepalived) waitForConfig(ctx context.Context) ([]byte, error) {
	said := false
	for {
		want, err := readSmall(filepath.Join(k.AgentDir, wantFile), maxConfigBytes)
		if err == nil && len(want) > 0 {
			if err := k.activate(want); err != nil {
				return nil, err
			}
			return want, nil
		}
		if !said {
			log.Printf("keepalived waits for the agent's configuration")
			said = true
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(k.Poll):
		}
	}
}

func (k Keepalived) activate(config []byte) error {
	return writeFile(filepath.Join(k.RunDir, activeFile), string(config))
}

// digest names a configuration in reports: the hex SHA-256 of its bytes.
func digest(config []byte) string {
	sum := sha256.Sum256(config)
	return hex.EncodeToString(sum[:])
}

// readSmall reads a file the other container writes: never through a symbolic link (it could
// name a file of this container's, such as its token) and at most limit bytes.
func readSmall(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", filepath.Base(path))
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", filepath.Base(path), limit)
	}
	return b, nil
}

// writeFile replaces path at once (keepalived never reads half a file). The temporary file is
// created anew, never opened through a link.
func writeFile(path, content string) error {
	tmp := path + ".tmp"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(content); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
