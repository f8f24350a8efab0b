package routerload

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Counters is one scrape of a router's metrics: counters and gauges summed over the entry points
// that serve routes.
type Counters struct {
	At                          time.Time
	Requests, BytesIn, BytesOut float64
	OpenConnections             float64
	CPUSeconds, MemoryBytes     float64
	// Started is when the router's process started (Unix seconds; 0: not exported): its counters
	// count from then.
	Started float64
}

// maxScrape bounds what a scrape reads: a router's metrics are a few hundred KiB at most.
const maxScrape = 16 << 20

// Format is how a flavour's router exposes its metrics (render.LoadMetrics.Format).
type Format string

const (
	// FormatTraefik is Traefik's Prometheus endpoint (--metrics.prometheus): entry points.
	FormatTraefik Format = "traefik"
	// FormatHAProxy is HAProxy's own Prometheus exporter (its prometheus-exporter service):
	// frontends. It exports no CPU time; memory is what its pools hold.
	FormatHAProxy Format = "haproxy"
)

// metricNames are the samples a format's figures come from, and the label naming the listener
// (an entry point or a frontend) that admin listeners are left out by.
type metricNames struct {
	requests, bytesIn, bytesOut, connections, cpuSeconds, memoryBytes, started, listener string
}

var formats = map[Format]metricNames{
	FormatTraefik: {requests: "traefik_entrypoint_requests_total", bytesIn: "traefik_entrypoint_requests_bytes_total",
		bytesOut: "traefik_entrypoint_responses_bytes_total", connections: "traefik_open_connections",
		cpuSeconds: "process_cpu_seconds_total", memoryBytes: "process_resident_memory_bytes",
		started: "process_start_time_seconds", listener: "entrypoint"},
	FormatHAProxy: {requests: "haproxy_frontend_http_requests_total", bytesIn: "haproxy_frontend_bytes_in_total",
		bytesOut: "haproxy_frontend_bytes_out_total", connections: "haproxy_frontend_current_sessions",
		memoryBytes: "haproxy_process_pool_allocated_bytes", started: "haproxy_process_start_time_seconds", listener: "proxy"},
}

// Parse reads one scrape in format f. The admin listeners (comma-separated entry points or
// frontends) are left out of the request figures: they answer probes and the reporter's own
// scrapes, not routes.
func Parse(f Format, r io.Reader, admin string, at time.Time) (Counters, error) {
	m, ok := formats[f]
	if !ok {
		return Counters{}, fmt.Errorf("unknown metrics format %q", f)
	}
	adminListeners := strings.Split(admin, ",")
	c := Counters{At: at}
	sc := bufio.NewScanner(io.LimitReader(r, maxScrape))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, labels, value, ok := sampleLine(sc.Text())
		if !ok || name == "" {
			continue
		}
		switch name {
		case m.requests, m.bytesIn, m.bytesOut, m.connections:
			if slices.Contains(adminListeners, labelValue(labels, m.listener)) {
				continue
			}
		}
		switch name {
		case m.requests:
			c.Requests += value
		case m.bytesIn:
			c.BytesIn += value
		case m.bytesOut:
			c.BytesOut += value
		case m.connections:
			c.OpenConnections += value
		case m.cpuSeconds:
			c.CPUSeconds = value
		case m.memoryBytes:
			c.MemoryBytes = value
		case m.started:
			c.Started = value
		}
	}
	return c, sc.Err()
}

// sampleLine splits a Prometheus text-format sample: name{labels} value [timestamp].
func sampleLine(line string) (name, labels string, value float64, ok bool) {
	if line == "" || line[0] == '#' {
		return "", "", 0, false
	}
	var rest string
	if i := strings.IndexByte(line, '{'); i >= 0 {
		j := strings.LastIndexByte(line, '}')
		if j < i {
			return "", "", 0, false
		}
		name, labels, rest = line[:i], line[i+1:j], line[j+1:]
	} else {
		var found bool
		name, rest, found = strings.Cut(line, " ")
		if !found {
			return "", "", 0, false
		}
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return "", "", 0, false
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return "", "", 0, false
	}
	return name, labels, v, true
}

// labelValue finds key="value" among a sample's labels (values with escaped quotes are not ones
// the reporter reads).
func labelValue(labels, key string) string {
	for _, kv := range strings.Split(labels, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if ok && k == key {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}
