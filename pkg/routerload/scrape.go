package routerload

import (
	"bufio"
	"fmt"
	"io"
	"math"
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
}

// maxScrape bounds what a scrape reads: a router's metrics are a few hundred KiB at most.
const maxScrape = 16 << 20

// Format is how a flavour's router exposes its metrics (render.LoadMetrics.Format).
type Format string

// FormatTraefik is Traefik's Prometheus endpoint (--metrics.prometheus).
const FormatTraefik Format = "traefik"

// Parse reads one scrape in format f. adminEntryPoint is left out of the request figures: it
// answers probes and the reporter's own scrapes, not routes.
func Parse(f Format, r io.Reader, adminEntryPoint string, at time.Time) (Counters, error) {
	if f != FormatTraefik {
		return Counters{}, fmt.Errorf("unknown metrics format %q", f)
	}
	c := Counters{At: at}
	sc := bufio.NewScanner(io.LimitReader(r, maxScrape))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, labels, value, ok := sampleLine(sc.Text())
		if !ok {
			continue
		}
		switch name {
		case "traefik_entrypoint_requests_total", "traefik_entrypoint_requests_bytes_total",
			"traefik_entrypoint_responses_bytes_total", "traefik_open_connections":
			if labelValue(labels, "entrypoint") == adminEntryPoint {
				continue
			}
		}
		switch name {
		case "traefik_entrypoint_requests_total":
			c.Requests += value
		case "traefik_entrypoint_requests_bytes_total":
			c.BytesIn += value
		case "traefik_entrypoint_responses_bytes_total":
			c.BytesOut += value
		case "traefik_open_connections":
			c.OpenConnections += value
		case "process_cpu_seconds_total":
			c.CPUSeconds = value
		case "process_resident_memory_bytes":
			c.MemoryBytes = value
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
