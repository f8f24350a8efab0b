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

// The agent and keepalived run in two containers of the router pod and share one directory (the
// run directory). The agent holds the router's API token and no capability; keepalived holds
// NET_ADMIN and NET_RAW and no token (security item 23). They speak through files in it, each
// written by one side only:
//
//   - wantFile, by the agent: the configuration keepalived should run. The agent writes it first
//     only once its peers run a configuration naming this node (vip.MayStart), so its presence is
//     keepalived's permission to start.
//   - the health file (the configuration's track_file), by the agent, before wantFile: whether the
//     router answers. keepalived only reads it (a file root wrote in the sticky directory, the
//     agent could not replace).
//   - entryFile and activeFile, by the supervisor: keepalived's entry configuration (the node's
//     interface, then an include of activeFile), and the copy of wantFile keepalived reads. A copy,
//     so what keepalived loads is exactly what the supervisor hashed.
//   - loadedFile, by the supervisor: the SHA-256 of the configuration keepalived was last started
//     or reloaded with; the agent reports it, so peers know what this node runs.
const (
	wantFile   = "rendered.conf"
	entryFile  = "keepalived.conf"
	activeFile = "active.conf"
	loadedFile = "loaded"
	// maxConfigBytes bounds what either side reads from the other: a ConfigMap holds at most 1 MiB.
	maxConfigBytes = 1 << 20
)

// Keepalived supervises keepalived in its own container: it starts keepalived once the agent wrote
// the configuration to run, reloads it (SIGHUP) when the agent writes another, and says which one
// runs. It never calls the API.
type Keepalived struct {
	Binary   string
	NodeName string // keepalived's config id: selects the node's own "@<node>" lines
	NodeIP   netip.Addr
	RunDir   string
	// Poll: how often the wanted configuration is compared with the one loaded.
	Poll time.Duration
}

// Supervise runs keepalived until ctx ends or keepalived exits.
func (k Keepalived) Supervise(ctx context.Context) error {
	iface, err := InterfaceOf(k.NodeIP)
	if err != nil {
		return err
	}
	// A restarted container starts a new keepalived: until it runs, nothing runs here.
	for _, f := range []string{loadedFile, activeFile} {
		if err := os.Remove(filepath.Join(k.RunDir, f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	def := fmt.Sprintf("%s=%s\ninclude %s\n", vip.InterfaceVariable, iface, filepath.Join(k.RunDir, activeFile))
	if err := writeFile(filepath.Join(k.RunDir, entryFile), def); err != nil {
		return err
	}
	config, loaded, err := k.waitForConfig(ctx)
	if err != nil {
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
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	log.Printf("keepalived started on %s (%s) as %s", iface, k.NodeIP, k.NodeName)
	if err := writeFile(filepath.Join(k.RunDir, loadedFile), loaded+"\n"); err != nil {
		return err
	}
	poll := time.NewTicker(k.Poll)
	defer poll.Stop()
	for {
		select {
		case err := <-exited:
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("keepalived exited: %w", err)
		case <-poll.C:
			want, err := readSmall(filepath.Join(k.RunDir, wantFile), maxConfigBytes)
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
			config, loaded = want, digest(want)
			if err := writeFile(filepath.Join(k.RunDir, loadedFile), loaded+"\n"); err != nil {
				log.Printf("%v", err)
			}
			log.Printf("configuration changed: keepalived reloaded (nodes %v)", vip.ConfigNodes(string(config)))
		}
	}
}

// waitForConfig waits for the agent's first configuration and makes it the active one.
func (k Keepalived) waitForConfig(ctx context.Context) ([]byte, string, error) {
	said := false
	for {
		want, err := readSmall(filepath.Join(k.RunDir, wantFile), maxConfigBytes)
		if err == nil && len(want) > 0 {
			if err := k.activate(want); err != nil {
				return nil, "", err
			}
			return want, digest(want), nil
		}
		if !said {
			log.Printf("keepalived waits for the agent's configuration")
			said = true
		}
		select {
		case <-ctx.Done():
			return nil, "", ctx.Err()
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
// created anew, never opened through a link the other container may have left in its place.
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
