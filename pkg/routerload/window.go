package routerload

import "time"

// Window keeps a router's scrapes over Span and turns them into a Report: rates over the window,
// not a spike between two scrapes.
type Window struct {
	Span    time.Duration
	samples []Counters
	// lastRead is the last scrape as read; carried is what counter resets took away, added back
	// as Prometheus' rate() does: HAProxy reloads its configuration (new routes) into a new worker
	// whose counters start at zero, and a router restarts beside its reporter.
	lastRead, carried Counters
}

// Add records a scrape. A counter that went down was reset: what it had counted is carried, so
// the rate goes on across it. A clock that went back starts the window anew.
func (w *Window) Add(c Counters) {
	if n := len(w.samples); n > 0 && !c.At.After(w.samples[n-1].At) {
		w.samples, w.carried = w.samples[:0], Counters{}
	}
	if len(w.samples) > 0 {
		carry := func(now, read float64, carried *float64) {
			if now < read {
				*carried += read
			}
		}
		carry(c.Requests, w.lastRead.Requests, &w.carried.Requests)
		carry(c.BytesIn, w.lastRead.BytesIn, &w.carried.BytesIn)
		carry(c.BytesOut, w.lastRead.BytesOut, &w.carried.BytesOut)
		carry(c.CPUSeconds, w.lastRead.CPUSeconds, &w.carried.CPUSeconds)
	}
	w.lastRead = c
	c.Requests += w.carried.Requests
	c.BytesIn += w.carried.BytesIn
	c.BytesOut += w.carried.BytesOut
	c.CPUSeconds += w.carried.CPUSeconds
	w.samples = append(w.samples, c)
	cut := 0
	for cut < len(w.samples)-2 && c.At.Sub(w.samples[cut+1].At) >= w.Span {
		cut++
	}
	w.samples = w.samples[cut:]
}

// Report is the load over the window, or false until it holds two scrapes.
func (w *Window) Report() (Report, bool) {
	if len(w.samples) < 2 {
		return Report{}, false
	}
	first, last := w.samples[0], w.samples[len(w.samples)-1]
	dt := last.At.Sub(first.At).Seconds()
	return Report{
		RequestsPerSecond: (last.Requests - first.Requests) / dt,
		BytesInPerSecond:  (last.BytesIn - first.BytesIn) / dt,
		BytesOutPerSecond: (last.BytesOut - first.BytesOut) / dt,
		OpenConnections:   last.OpenConnections,
		CPUMillicores:     max(0, (last.CPUSeconds-first.CPUSeconds)/dt*1000),
		MemoryBytes:       last.MemoryBytes,
		Window:            last.At.Sub(first.At),
	}, true
}
