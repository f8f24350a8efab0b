// Package agent runs beside keepalived in a VIP shard's router pod: it starts keepalived with the
// configuration Shardgate renders, reloads it when that changes (keepalived keeps its VIPs across
// a reload), and tells keepalived through the health file whether the local router answers, so a
// router that stops answering gives up its VIPs within a probe interval, not only a dead node.
package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/shardgate/shardgate/pkg/vip"
)

// Options configure the agent.
type Options struct {
	Keepalived string // keepalived binary
	Source     Source // the rendered configuration and VIP list
	NodeName   string // keepalived's config id: selects the node's own "@<node>" lines
	NodeIP     netip.Addr
	HealthFile string
	RunDir     string // where the agent writes keepalived's configuration and pid files
	RouterURL  string // answers 200 while the local router serves
	// ProbeInterval between router probes (each with this timeout too).
	ProbeInterval time.Duration
	// ReloadCheck: how often the configuration is compared with the one loaded (and, before
	// keepalived starts, how often the peers' reports are read).
	ReloadCheck time.Duration
	// Reporter, when set, reports this node (the configuration keepalived runs, the VIPs on the
	// interface) and holds the start back until the peers run a configuration naming this node.
	Reporter *Reporter
}

// Run starts keepalived and keeps it fed until ctx ends or keepalived exits.
func Run(ctx context.Context, o Options) error {
	iface, err := InterfaceOf(o.NodeIP)
	if err != nil {
		return err
	}
	entry, rendered := filepath.Join(o.RunDir, "keepalived.conf"), filepath.Join(o.RunDir, "rendered.conf")
	// keepalived reads the interface as a definition before the rendered file, which is the
	// same for every node.
	def := fmt.Sprintf("%s=%s\ninclude %s\n", vip.InterfaceVariable, iface, rendered)
	if err := os.WriteFile(entry, []byte(def), 0o644); err != nil {
		return err
	}
	if err := writeHealth(o.HealthFile, false); err != nil {
		return err
	}
	rep := newReports(o, iface)
	go rep.run(ctx)
	loaded, err := waitToStart(ctx, o, rep)
	if err != nil {
		return err
	}
	if err := writeFile(rendered, loaded.Config); err != nil {
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
	rep.loaded(loaded)
	rep.send()

	probe := time.NewTicker(o.ProbeInterval)
	defer probe.Stop()
	reload := time.NewTicker(o.ReloadCheck)
	defer reload.Stop()
	client := &http.Client{Timeout: o.ProbeInterval}
	healthy, written, reloaded := false, time.Now(), false
	for {
		select {
		case err := <-exited:
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("keepalived exited: %w", err)
		case <-probe.C:
			// A change of the VIPs held is reported at once: two reports naming one VIP are
			// a split, so the one that lost it must not say so for seconds.
			rep.send()
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
		case <-reload.C:
			if reloaded {
				// Reported a check after the SIGHUP, once keepalived has applied it: a joining
				// node starts on this report and must hear adverts from then on.
				rep.loaded(loaded)
				rep.send()
				reloaded = false
			}
			latest, ok := o.Source.Latest()
			if !ok || latest.Config == loaded.Config {
				rep.vips(latest)
				continue
			}
			if err := writeFile(rendered, latest.Config); err != nil {
				log.Printf("write the configuration: %v", err)
				continue
			}
			if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
				log.Printf("reload keepalived: %v", err)
				continue
			}
			loaded = latest
			reloaded = true
			log.Printf("configuration changed: keepalived reloaded (nodes %s)", strings.Join(vip.ConfigNodes(loaded.Config), ", "))
		}
	}
}

// waitToStart waits until the configuration names this node and, with a Reporter, every peer
// that runs keepalived runs a configuration naming it too (vip.MayStart), and returns the
// configuration to start with. Meanwhile it reports this node as not running keepalived.
func waitToStart(ctx context.Context, o Options, rep *reports) (Rendered, error) {
	var said string
	for {
		r, ok := o.Source.Latest()
		why := "no configuration read yet"
		if ok {
			nodes := vip.ConfigNodes(r.Config)
			var reports map[string]vip.NodeReport
			var err error
			if o.Reporter != nil && slices.Contains(nodes, o.NodeName) {
				reports, err = o.Reporter.Peers(ctx, nodes)
			}
			if err != nil {
				why = err.Error()
			} else if start, w := vip.MayStart(o.NodeName, nodes, reports, time.Now()); start {
				return r, nil
			} else {
				why = w
			}
			rep.vips(r)
		}
		if why != said {
			log.Printf("keepalived waits: %s", why)
			said = why
		}
		rep.send()
		select {
		case <-ctx.Done():
			return Rendered{}, ctx.Err()
		case <-time.After(o.ReloadCheck):
		}
	}
}

// reports keeps what this node reports and hands it to run, which sends it.
type reports struct {
	o     Options
	iface string
	now   vip.NodeReport
	list  []netip.Addr // the VIPs rendered
	// latest holds the newest report not yet taken by run; a newer one replaces it. nil: what
	// the node holds is unknown, and its report must lapse rather than be renewed.
	latest  chan *vip.NodeReport
	readErr string // the interface read's last error, logged once
}

func newReports(o Options, iface string) *reports {
	return &reports{o: o, iface: iface, latest: make(chan *vip.NodeReport, 1)}
}

func (r *reports) loaded(c Rendered) {
	sum := sha256.Sum256([]byte(c.Config))
	r.now.Config, r.now.Peers = hex.EncodeToString(sum[:]), vip.ConfigNodes(c.Config)
	r.vips(c)
}

func (r *reports) vips(c Rendered) {
	list, err := ParseVIPs(c.VIPs)
	if err != nil {
		log.Printf("%v", err)
		return
	}
	r.list = list
}

// send hands this node's report to run without waiting for the API server: the probe loop that
// keeps keepalived's health file fresh must not stall while the control plane is unreachable,
// which is when failover matters most.
func (r *reports) send() {
	if r.o.Reporter == nil {
		return
	}
	held, err := heldOn(r.iface, r.list)
	if err != nil {
		// Unknown is neither "none" (a report of no VIPs could hide a split) nor the last report
		// (renewed, it would say fresh for as long as the failure lasts): the report lapses.
		if err.Error() != r.readErr {
			log.Printf("read the VIPs on %s: %v (the node's report lapses until it can)", r.iface, err)
		}
		r.readErr = err.Error()
		r.hand(nil)
		return
	}
	r.readErr = ""
	r.now.Held = held
	now := r.now
	r.hand(&now)
}

// hand replaces the report run has not taken yet, if any, with rep.
func (r *reports) hand(rep *vip.NodeReport) {
	select {
	case <-r.latest:
	default:
	}
	r.latest <- rep
}

// run sends the reports send hands it: at once when what they say changed, every leaseSeconds/3
// to keep the Lease fresh, and after a failure again with a backoff (at most maxReportBackoff).
func (r *reports) run(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var pending *vip.NodeReport
	var sent string
	var at, retryAt time.Time
	backoff := minReportBackoff
	for {
		select {
		case <-ctx.Done():
			return
		case pending = <-r.latest:
		case <-tick.C:
		}
		if pending == nil || time.Now().Before(retryAt) {
			continue
		}
		said := fmt.Sprint(pending.Annotations())
		if said == sent && time.Since(at) < leaseSeconds*time.Second/3 {
			continue
		}
		if err := r.o.Reporter.Report(ctx, *pending); err != nil {
			if ctx.Err() == nil {
				log.Printf("%v", err)
			}
			sent, retryAt, backoff = "", time.Now().Add(backoff), min(2*backoff, maxReportBackoff)
			continue
		}
		sent, at, backoff = said, time.Now(), minReportBackoff
	}
}

// A failed report is tried again after minReportBackoff, doubling up to maxReportBackoff: often
// enough to keep the Lease (leaseSeconds) alive through a blip, without hammering a control plane
// that is down.
const (
	minReportBackoff = 200 * time.Millisecond
	maxReportBackoff = 2 * time.Second
)

// writeFile replaces path at once (keepalived never reads half a file).
func writeFile(path, content string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
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
	if healthy {
		return writeFile(path, "0\n")
	}
	return writeFile(path, "1\n")
}
