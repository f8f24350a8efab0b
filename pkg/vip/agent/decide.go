package agent

import "time"

// The agent's and the supervisor's decisions, apart from the files, clocks and processes they
// read and act on, so that each is table-tested (decide_test.go).

// rewriteDue says whether a tracked file (the agent's health, the supervisor's alive file) is
// written now: a change at once, the same value again every second, because keepalived reads a
// tracked file before it watches it (at each start and reload) and misses a write in between.
func rewriteDue(now, last bool, sinceWritten time.Duration) bool {
	return now != last || sinceWritten >= time.Second
}

// settled says whether the router counts as serving: it answers now and has answered without a
// miss since answeringSince for at least settle (a router may answer its health before all its
// routes are loaded: Traefik's ping). A miss counts at once, so failover stays as fast.
func settled(answers bool, answeringSince, now time.Time, settle time.Duration) bool {
	return answers && now.Sub(answeringSince) >= settle
}

// reloadInput is what one of the agent's reload checks sees.
type reloadInput struct {
	Loaded   string   // the digest keepalived's supervisor says runs ("": none, or not a digest)
	Reported string   // the digest reported so far ("": keepalived not running)
	Wanted   Rendered // the configuration written for keepalived
	Latest   Rendered // the source's latest configuration
	Read     bool     // false: the source has read none yet
	Faulted  bool     // keepalived is in FAULT until it runs Wanted and the peers allow
}

// reloadDecision is what the check does, in this order.
type reloadDecision struct {
	// Report: report Reported (what keepalived runs) at once.
	Report   bool
	Reported string
	// KeepVIPs: Latest is Wanted: its VIP list is the one reported.
	KeepVIPs bool
	// AskPeers: keepalived, in FAULT, runs Wanted: it leaves FAULT if the peers allow.
	AskPeers bool
	// Write: Latest is another configuration: write it, keepalived reloads with it.
	Write bool
}

// decideReload: a digest the supervisor reports differently is reported at once (a joining node
// starts on this report and must hear adverts from then on). Once keepalived ran, nothing (or
// garbage) where its digest was is reported as unknownConfig, not as "nothing runs": the
// supervisor never removes it. A new configuration from the source is written at once.
func decideReload(in reloadInput) reloadDecision {
	d := reloadDecision{Reported: in.Reported}
	if in.Loaded != in.Reported {
		d.Report, d.Reported = true, in.Loaded
		if in.Loaded == "" {
			d.Reported = unknownConfig
		}
	}
	switch {
	case !in.Read:
	case in.Latest.Config == in.Wanted.Config:
		d.KeepVIPs = true
		d.AskPeers = in.Faulted && d.Reported == digest([]byte(in.Wanted.Config))
	default:
		d.Write = true
	}
	return d
}

// observe takes one look at the agent's health file (present false: missing, or not a regular
// file; stamp its inode, modification time and size) at now, from this process' monotonic
// clock, and says whether the agent is alive: the file changed within agentSilence. At the
// first look only, the file's own time says whether the agent wrote it lately.
func (h *heartbeat) observe(present bool, stamp [3]int64, modified, now time.Time) bool {
	switch {
	case !present:
	case !h.seen:
		h.seen, h.stamp = true, stamp
		if now.Sub(modified) < agentSilence {
			h.changed = now
		}
	case stamp != h.stamp:
		h.stamp, h.changed = stamp, now
	}
	return !h.changed.IsZero() && now.Sub(h.changed) < agentSilence
}
