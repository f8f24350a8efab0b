// Package agent runs beside keepalived in a VIP shard's router pod: it starts keepalived with the
// configuration Shardgate renders, reloads it when that changes (keepalived keeps its VIPs across
// a reload), and tells keepalived through the health file whether the local router answers, so a
// router that stops answering gives up its VIPs within a probe interval, not only a dead node.
package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/shardgate/shardgate/pkg/vip"
)

// Options configure the agent.
type Options struct {
	Keepalived string // keepalived binary
	Config     string // the rendered configuration (a mounted ConfigMap key)
	NodeName   string // keepalived's config id: selects the node's own "@<node>" lines
	NodeIP     netip.Addr
	HealthFile string
	RunDir     string // where the agent writes keepalived's entry configuration and pid files
	RouterURL  string // answers 200 while the local router serves
	// ProbeInterval between router probes (each with this timeout too).
	ProbeInterval time.Duration
	// ReloadCheck: how often the configuration is compared with the one loaded.
	ReloadCheck time.Duration
	// VIPs is the rendered VIP list; with Reporter set, the VIPs on the interface are reported
	// as held by this node.
	VIPs     string
	Reporter *Reporter
}

// Run starts keepalived and keeps it fed until ctx ends or keepalived exits.
func Run(ctx context.Context, o Options) error {
	iface, err := InterfaceOf(o.NodeIP)
	if err != nil {
		return err
	}
	entry := filepath.Join(o.RunDir, "keepalived.conf")
	// keepalived reads the interface as a definition before the rendered file, which is the
	// same for every node.
	def := fmt.Sprintf("%s=%s\ninclude %s\n", vip.InterfaceVariable, iface, o.Config)
	if err := os.WriteFile(entry, []byte(def), 0o644); err != nil {
		return err
	}
	if err := writeHealth(o.HealthFile, false); err != nil {
		return err
	}
	// Start only once Shardgate has rendered this node among the peers: a node no other node
	// sends adverts to would take every VIP (a pod is often scheduled before its node is in
	// the configuration; the kubelet brings the new one within about a minute).
	loaded, err := waitForSelf(ctx, o.Config, o.NodeName, o.ReloadCheck)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, o.Keepalived, "--vrrp", "--dont-fork", "--log-console", "--log-detail",
		"--use-file", entry, "--config-id", o.NodeName,
		"--pid", filepath.Join(o.RunDir, "keepalived.pid"), "--vrrp_pid", filepath.Join(o.RunDir, "vrrp.pid"),
		"--checkers_pid", filepath.Join(o.RunDir, "checkers.pid"))
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start keepalived: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	log.Printf("keepalived started on %s (%s) as %s", iface, o.NodeIP, o.NodeName)

	probe := time.NewTicker(o.ProbeInterval)
	defer probe.Stop()
	reload := time.NewTicker(o.ReloadCheck)
	defer reload.Stop()
	report := time.NewTicker(leaseSeconds * time.Second / 3)
	defer report.Stop()
	client := &http.Client{Timeout: o.ProbeInterval}
	healthy, written := false, time.Now()
	for {
		select {
		case err := <-exited:
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("keepalived exited: %w", err)
		case <-probe.C:
			// A change is written at once; the same health again every second, because keepalived
			// watches the file through inotify and a write that falls between its first read and
			// its watch while it starts is otherwise never seen (its node stayed "unhealthy").
			h := answers(ctx, client, o.RouterURL)
			if h == healthy && time.Since(written) < time.Second {
				continue
			}
			if err := writeHealth(o.HealthFile, h); err != nil {
				log.Printf("health file: %v", err)
				continue
			}
			written = time.Now()
			if h != healthy {
				log.Printf("router answers: %v", h)
			}
			healthy = h
		case <-report.C:
			if o.Reporter == nil {
				continue
			}
			vips, err := ReadVIPs(o.VIPs)
			if err != nil {
				log.Printf("%v", err)
				continue
			}
			if err := o.Reporter.Report(ctx, heldOn(iface, vips)); err != nil && ctx.Err() == nil {
				log.Printf("%v", err)
			}
		case <-reload.C:
			d, err := digest(o.Config)
			if err != nil || bytes.Equal(d, loaded) {
				continue
			}
			if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
				log.Printf("reload keepalived: %v", err)
				continue
			}
			loaded = d
			log.Printf("configuration changed: keepalived reloaded")
		}
	}
}

// waitForSelf waits until the configuration has lines for node, and returns its digest.
func waitForSelf(ctx context.Context, path, node string, every time.Duration) ([]byte, error) {
	for {
		b, err := os.ReadFile(path)
		if err == nil && bytes.Contains(b, []byte("\n@"+node+" ")) {
			return digest(path)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(every):
		}
	}
}

// interfaceAddrs are the addresses on the named interface.
func interfaceAddrs(name string) (map[netip.Addr]bool, error) {
	i, err := net.InterfaceByName(name)
	if err != nil {
		return nil, err
	}
	addrs, err := i.Addrs()
	if err != nil {
		return nil, err
	}
	out := map[netip.Addr]bool{}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out[p.Addr().Unmap()] = true
		}
	}
	return out, nil
}

// InterfaceOf names the interface holding addr.
func InterfaceOf(addr netip.Addr) (string, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return "", err
	}
	for _, i := range ifs {
		addrs, err := i.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr() == addr {
				return i.Name, nil
			}
		}
	}
	return "", fmt.Errorf("no interface holds %s", addr)
}

func answers(ctx context.Context, c *http.Client, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := c.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// writeHealth replaces the health file at once (keepalived sees the rename through inotify):
// 0 healthy, 1 not (multiplied by the track_file's negative weight).
func writeHealth(path string, healthy bool) error {
	v := "1\n"
	if healthy {
		v = "0\n"
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(v), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func digest(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) == 0 {
		return nil, errors.New("empty")
	}
	s := sha256.Sum256(b)
	return s[:], nil
}
