// Package agent runs beside keepalived in a VIP shard's router pod: it lets keepalived start with
// the configuration Shardgate renders, has it reloaded when that changes (keepalived keeps its
// VIPs across a reload), and tells keepalived through the health file whether the local router
// answers, so a router that stops answering gives up its VIPs within a probe interval, not only a
// dead node. keepalived runs in a container of its own under Keepalived, which never holds the
// router's API token.
package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log"
	"net/http"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/shardgate/shardgate/pkg/vip"
)

// Options configure the agent.
type Options struct {
	Source   Source // the rendered configuration and VIP list
	NodeName string // keepalived's config id: selects the node's own "@<node>" lines
	NodeIP   netip.Addr
	// AgentDir is the agent's own directory, KeepalivedDir keepalived's, read only (see Keepalived).
	AgentDir, KeepalivedDir string
	RouterURL               string // answers 200 while the local router serves
	// ProbeInterval between router probes (each with this timeout too).
	ProbeInterval time.Duration
	// RouterSettle is how long the router must answer without a miss before it counts as serving
	// (its flavour's readiness settle; 0: at its first answer).
	RouterSettle time.Duration
	// ReloadCheck: how often the configuration is compared with the one loaded (and, before
	// keepalived starts, how often the peers' reports are read).
	ReloadCheck time.Duration
	// Reporter, when set, reports this node (the configuration keepalived runs, the VIPs on the
	// interface) and holds the start back until the peers run a configuration naming this node.
	Reporter *Reporter
	// Network reads the node's interfaces (nil: the system's).
	Network Network
}

// Run feeds keepalived, which runs in a container of its own (see Keepalived), until ctx ends:
// it writes the configuration keepalived may start with once the peers run one naming this node,
// every later one at once, and the router's health; and it reports what keepalived runs.
func Run(ctx context.Context, o Options) error {
	iface, err := o.network().InterfaceOf(o.NodeIP)
	if err != nil {
		return err
	}
	health := filepath.Join(o.AgentDir, healthFile)
	rep := newReports(o, iface)
	// A configuration an earlier agent of this pod wrote was allowed to start: keepalived runs it,
	// or will, whether or not this agent ever gets its peers' reports again. Its router's health
	// stays as that agent left it until the first probe (writing "failing" first would move this
	// node's VIPs away and back for a restart of the agent alone), and the first report says what
	// keepalived runs (saying "nothing" would let a joining node start early).
	wanted, resumed := written(o.AgentDir)
	// keepalived in FAULT (this pod's agent was silent for agentSilence) starts anew when the agent
	// speaks again: it leaves FAULT at the agent's first health write, so that write waits until
	// keepalived runs the ConfigMap's configuration and the peers allow it, as at a first start
	// (meanwhile a joining node may have started, this node's report having lapsed).
	faulted := resumed && keepalivedFaulted(o.KeepalivedDir)
	if faulted {
		log.Printf("keepalived is in FAULT: it stays so until it runs the latest configuration and the peers allow it")
	}
	reported := ""
	if resumed {
		reported = loadedDigest(o.KeepalivedDir)
		rep.vips(wanted)
		rep.observe(reported, wanted)
	} else if err := writeHealth(health, false); err != nil {
		return err
	}
	go rep.run(ctx)
	if !resumed {
		if wanted, err = waitToStart(ctx, o, rep); err != nil {
			return err
		}
		if err := writeWanted(o.AgentDir, wanted); err != nil {
			return err
		}
		log.Printf("keepalived may start (nodes %s)", strings.Join(vip.ConfigNodes(wanted.Config), ", "))
	}
	rep.vips(wanted)
	rep.send()
	// keepalived's container of an older image never takes the configuration: say so.
	unloadedSince, warned, faultSaid := time.Now(), false, ""

	probe := time.NewTicker(o.ProbeInterval)
	defer probe.Stop()
	reload := time.NewTicker(o.ReloadCheck)
	defer reload.Stop()
	client := &http.Client{Timeout: o.ProbeInterval}
	healthy, written, answering, since := false, time.Now(), false, time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-probe.C:
			// A change of the VIPs held is reported at once: two reports naming one VIP are
			// a split, so the one that lost it must not say so for seconds.
			rep.send()
			if faulted {
				continue
			}
			// A change is written at once; the same health again every second, because keepalived
			// watches the file through inotify and a write that falls between its first read and
			// its watch while it starts is otherwise never seen (its node stayed "unhealthy").
			a := answers(ctx, client, o.RouterURL)
			if a && !answering {
				since = time.Now()
			}
			answering = a
			h := settled(a, since, time.Now(), o.RouterSettle)
			if !rewriteDue(h, healthy, time.Since(written)) {
				continue
			}
			if err := writeHealth(health, h); err != nil {
				log.Printf("health file: %v", err)
				continue
			}
			written = time.Now()
			if h != healthy {
				log.Printf("router answers: %v", h)
			}
			healthy = h
		case <-reload.C:
			latest, read := o.Source.Latest()
			d := decideReload(reloadInput{Loaded: loadedDigest(o.KeepalivedDir), Reported: reported, Wanted: wanted,
				Latest: latest, Read: read, Faulted: faulted})
			if d.Report {
				rep.observe(d.Reported, wanted)
				rep.send()
			}
			reported = d.Reported
			if reported != "" {
				unloadedSince = time.Now()
			} else if !warned && time.Since(unloadedSince) > 30*time.Second {
				log.Printf("keepalived's container has loaded no configuration in 30s: does it run " +
					"`shardgate-vip-agent keepalived` from an image as new as this agent's?")
				warned = true
			}
			if d.KeepVIPs {
				rep.vips(latest)
			}
			if d.AskPeers {
				if ok, why := peersAllow(ctx, o, wanted); ok {
					faulted = false
					log.Printf("keepalived leaves FAULT (nodes %s)", strings.Join(vip.ConfigNodes(wanted.Config), ", "))
				} else if why != faultSaid {
					log.Printf("keepalived stays in FAULT: %s", why)
					faultSaid = why
				}
			}
			if !d.Write {
				continue
			}
			if err := writeWanted(o.AgentDir, latest); err != nil {
				log.Printf("write the configuration: %v", err)
				continue
			}
			wanted = latest
			log.Printf("configuration changed: keepalived reloads (nodes %s)", strings.Join(vip.ConfigNodes(wanted.Config), ", "))
		}
	}
}

// written is the configuration (and its VIP list) an earlier agent of this pod wrote.
func written(dir string) (Rendered, bool) {
	c, err := readSmall(filepath.Join(dir, wantFile), maxConfigBytes)
	if err != nil || len(c) == 0 {
		return Rendered{}, false
	}
	v, err := readSmall(filepath.Join(dir, vipsFile), maxConfigBytes)
	if err != nil {
		log.Printf("the VIP list beside the configuration: %v", err)
	}
	r := Rendered{Config: string(c), VIPs: string(v)}
	log.Printf("keepalived was allowed to start by an earlier agent (nodes %s)", strings.Join(vip.ConfigNodes(r.Config), ", "))
	return r, true
}

// writeWanted writes the configuration keepalived is to run, its VIP list first (read back by a
// restarted agent).
func writeWanted(dir string, r Rendered) error {
	if err := writeFile(filepath.Join(dir, vipsFile), r.VIPs); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, wantFile), r.Config)
}

// keepalivedFaulted: keepalived's supervisor put keepalived in FAULT (its alive file says 1).
func keepalivedFaulted(dir string) bool {
	b, err := readSmall(filepath.Join(dir, aliveFile), 8)
	return err == nil && strings.TrimSpace(string(b)) == "1"
}

// unknownConfig is reported for a configuration keepalived runs that the agent cannot name.
const unknownConfig = "unknown"

// loadedDigest is what keepalived's supervisor says keepalived runs ("" while it says nothing,
// or anything but a digest).
func loadedDigest(dir string) string {
	b, err := readSmall(filepath.Join(dir, loadedFile), 2*sha256.Size+1)
	if err != nil {
		return ""
	}
	d := strings.TrimSpace(string(b))
	if _, err := hex.DecodeString(d); err != nil || len(d) != 2*sha256.Size {
		return ""
	}
	return d
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
			start, w := peersAllow(ctx, o, r)
			if start {
				return r, nil
			}
			why = w
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

// peersAllow says whether keepalived may start (or leave FAULT) with r: r names this node and,
// with a Reporter, every peer that runs keepalived runs a configuration naming it (vip.MayStart).
func peersAllow(ctx context.Context, o Options, r Rendered) (bool, string) {
	nodes := vip.ConfigNodes(r.Config)
	var reports map[string]vip.NodeReport
	if o.Reporter != nil && slices.Contains(nodes, o.NodeName) {
		var err error
		if reports, err = o.Reporter.Peers(ctx, nodes); err != nil {
			return false, err.Error()
		}
	}
	return vip.MayStart(o.NodeName, nodes, reports, time.Now())
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
	r.now.Config, r.now.Peers = digest([]byte(c.Config)), vip.ConfigNodes(c.Config)
	r.vips(c)
}

// observe sets what the report says keepalived runs from the digest its supervisor wrote: the
// configuration wanted, with its peers, once it is that one; any other (a reload not applied yet,
// or a digest nobody rendered) as running with no peer known, which keeps every joining node
// waiting; before the supervisor said anything, not running.
func (r *reports) observe(d string, wanted Rendered) {
	switch d {
	case "":
		r.now.Config, r.now.Peers = "", nil
	case digest([]byte(wanted.Config)):
		r.loaded(wanted)
	default:
		r.now.Config, r.now.Peers = d, nil
	}
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
	onIface, err := r.o.network().Addrs(r.iface)
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
	r.now.Held = held(onIface, r.list)
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
