package routerload

import "time"

// Window keeps what a router counted over Span and turns it into a Report: rates over the
// window, not a spike between two scrapes.
//
// A router's counters start again from zero when its process does: HAProxy reloads its
// configuration into a new worker (a tenant's new Service, an edited Secret: as often as every
// second), and a router restarts beside its reporter. A scrape whose process started since the
// last one (its start time changed, or a counter went down) counts what the new process counted,
// over the time it has been counting; the time before it started is not observed, and the rate
// is what was counted over the time observed. So reloads at any pace neither read as idle nor
// leave the router without a report.
type Window struct {
	Span      time.Duration
	last      *Counters
	intervals []interval
}

// interval is what was counted between two scrapes, and for how long it was counted.
type interval struct {
	end                                     time.Time
	observed                                float64 // seconds
	requests, bytesIn, bytesOut, cpuSeconds float64
}

// Add records a scrape. A clock that went back starts the window anew.
func (w *Window) Add(c Counters) {
	if w.last != nil && !c.At.After(w.last.At) {
		w.last, w.intervals = nil, nil
	}
	if w.last != nil {
		w.intervals = append(w.intervals, between(*w.last, c))
		cut := 0
		for cut < len(w.intervals)-1 && c.At.Sub(w.intervals[cut].end) >= w.Span {
			cut++
		}
		w.intervals = w.intervals[cut:]
	}
	w.last = &c
}

// between is what the router counted from prev to c.
func between(prev, c Counters) interval {
	span := c.At.Sub(prev.At).Seconds()
	restarted := (c.Started != 0 && prev.Started != 0 && c.Started != prev.Started) ||
		c.Requests < prev.Requests || c.BytesIn < prev.BytesIn || c.BytesOut < prev.BytesOut
	if !restarted {
		return interval{end: c.At, observed: span, requests: c.Requests - prev.Requests, bytesIn: c.BytesIn - prev.BytesIn,
			bytesOut: c.BytesOut - prev.BytesOut, cpuSeconds: max(0, c.CPUSeconds-prev.CPUSeconds)}
	}
	observed := span
	if c.Started != 0 {
		// Exported start times are whole seconds, cut down: since then is never less than the
		// time the process has counted, so the rate is never overstated (a tenth of a second at
		// least: a process that has just started counted little).
		observed = min(span, max(float64(c.At.UnixNano())/1e9-c.Started, 0.1))
	}
	return interval{end: c.At, observed: observed, requests: c.Requests, bytesIn: c.BytesIn, bytesOut: c.BytesOut,
		cpuSeconds: c.CPUSeconds}
}

// Report is the load over the window, or false until it holds two scrapes.
func (w *Window) Report() (Report, bool) {
	if len(w.intervals) == 0 {
		return Report{}, false
	}
	var sum interval
	for _, iv := range w.intervals {
		sum.observed += iv.observed
		sum.requests += iv.requests
		sum.bytesIn += iv.bytesIn
		sum.bytesOut += iv.bytesOut
		sum.cpuSeconds += iv.cpuSeconds
	}
	if sum.observed <= 0 {
		return Report{}, false
	}
	first := w.intervals[0].end.Add(-time.Duration(w.intervals[0].observed * float64(time.Second)))
	return Report{
		RequestsPerSecond: sum.requests / sum.observed,
		BytesInPerSecond:  sum.bytesIn / sum.observed,
		BytesOutPerSecond: sum.bytesOut / sum.observed,
		OpenConnections:   w.last.OpenConnections,
		CPUMillicores:     sum.cpuSeconds / sum.observed * 1000,
		MemoryBytes:       w.last.MemoryBytes,
		Window:            w.last.At.Sub(first),
	}, true
}
