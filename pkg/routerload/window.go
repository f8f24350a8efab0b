package routerload

import "time"

// Window keeps a router's scrapes over Span and turns them into a Report: rates over the window,
// not a spike between two scrapes.
type Window struct {
	Span    time.Duration
	samples []Counters
}

// Add records a scrape. A counter that went down (the router restarted) starts the window anew.
func (w *Window) Add(c Counters) {
	if n := len(w.samples); n > 0 {
		last := w.samples[n-1]
		if c.Requests < last.Requests || c.BytesIn < last.BytesIn || c.BytesOut < last.BytesOut || !c.At.After(last.At) {
			w.samples = w.samples[:0]
		}
	}
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
