package routerload

import (
	"strings"
	"testing"
	"time"
)

// A Traefik v3 scrape, trimmed: the admin entry point's own requests are left out, the route
// entry points summed.
const traefikScrape = `# HELP traefik_entrypoint_requests_total How many HTTP requests processed on an entrypoint.
# TYPE traefik_entrypoint_requests_total counter
traefik_entrypoint_requests_total{code="200",entrypoint="web",method="GET",protocol="http"} 100
traefik_entrypoint_requests_total{code="404",entrypoint="websecure",method="GET",protocol="http"} 20
traefik_entrypoint_requests_total{code="200",entrypoint="traefik",method="GET",protocol="http"} 5000
traefik_entrypoint_requests_bytes_total{code="200",entrypoint="web",method="GET",protocol="http"} 1000
traefik_entrypoint_responses_bytes_total{code="200",entrypoint="web",method="GET",protocol="http"} 4000
traefik_entrypoint_responses_bytes_total{code="200",entrypoint="traefik",method="GET",protocol="http"} 9e9
traefik_open_connections{entrypoint="web",protocol="TCP"} 3
traefik_open_connections{entrypoint="traefik",protocol="TCP"} 1
process_cpu_seconds_total 12.5
process_resident_memory_bytes 5.2e+07
process_start_time_seconds 1.7957e+09
garbage line without value
traefik_entrypoint_requests_total{entrypoint="web"} NaN
`

func TestParseTraefik(t *testing.T) {
	at := time.Unix(100, 0)
	c, err := Parse(FormatTraefik, strings.NewReader(traefikScrape), "traefik", at)
	if err != nil {
		t.Fatal(err)
	}
	want := Counters{At: at, Requests: 120, BytesIn: 1000, BytesOut: 4000, OpenConnections: 3, CPUSeconds: 12.5, MemoryBytes: 5.2e7,
		Started: 1.7957e9}
	if c != want {
		t.Errorf("got %+v want %+v", c, want)
	}
	if _, err := Parse("nginx", strings.NewReader(""), "", at); err == nil {
		t.Error("an unknown format was read")
	}
}

// An HAProxy 3.0 scrape of its prometheus-exporter (the lines' shape as Debian's haproxy writes
// them): the stats and healthz frontends are left out, http and https summed; no CPU time.
const haproxyScrape = `haproxy_process_pool_allocated_bytes 253872
haproxy_process_start_time_seconds 1795784004
haproxy_process_requests_total 9999
haproxy_frontend_current_sessions{proxy="stats"} 1
haproxy_frontend_current_sessions{proxy="http"} 2
haproxy_frontend_current_sessions{proxy="https"} 5
haproxy_frontend_bytes_in_total{proxy="stats"} 700
haproxy_frontend_bytes_in_total{proxy="http"} 246
haproxy_frontend_bytes_out_total{proxy="http"} 219
haproxy_frontend_bytes_out_total{proxy="healthz"} 5000
# HELP haproxy_frontend_http_requests_total Total number of HTTP requests processed by this object
# TYPE haproxy_frontend_http_requests_total counter
haproxy_frontend_http_requests_total{proxy="stats"} 1
haproxy_frontend_http_requests_total{proxy="healthz"} 400
haproxy_frontend_http_requests_total{proxy="http"} 3
haproxy_frontend_http_requests_total{proxy="https"} 30
haproxy_frontend_http_requests_total{proxy="https"} NaN
`

func TestParseHAProxy(t *testing.T) {
	at := time.Unix(100, 0)
	c, err := Parse(FormatHAProxy, strings.NewReader(haproxyScrape), "stats,healthz", at)
	if err != nil {
		t.Fatal(err)
	}
	want := Counters{At: at, Requests: 33, BytesIn: 246, BytesOut: 219, OpenConnections: 7, MemoryBytes: 253872,
		Started: 1795784004}
	if c != want {
		t.Errorf("got %+v want %+v", c, want)
	}
	// The other format's samples are not this one's.
	if c, _ := Parse(FormatHAProxy, strings.NewReader(traefikScrape), "traefik", at); c.Requests != 0 || c.CPUSeconds != 0 {
		t.Errorf("a Traefik scrape read as HAProxy's: %+v", c)
	}
}

func TestWindowRates(t *testing.T) {
	w := Window{Span: 30 * time.Second}
	t0 := time.Unix(1000, 0)
	if _, ok := w.Report(); ok {
		t.Fatal("a report from no scrape")
	}
	for i := range 10 { // 10 requests/s for 45 s, scraped every 5 s
		s := float64(i * 5)
		w.Add(Counters{At: t0.Add(time.Duration(i*5) * time.Second), Requests: 10 * s, BytesIn: 100 * s, BytesOut: 1000 * s,
			CPUSeconds: 0.2 * s, OpenConnections: 4})
	}
	r, ok := w.Report()
	if !ok || r.RequestsPerSecond != 10 || r.BytesInPerSecond != 100 || r.BytesOutPerSecond != 1000 ||
		r.CPUMillicores != 200 || r.OpenConnections != 4 {
		t.Fatalf("got %+v %v", r, ok)
	}
	if r.Window < 30*time.Second || r.Window > 35*time.Second {
		t.Errorf("window %s: not about the span", r.Window)
	}
	// A spike between two scrapes is averaged over the window, not reported as is.
	w.Add(Counters{At: t0.Add(50 * time.Second), Requests: 450 + 1000, BytesIn: 4500, BytesOut: 45000, CPUSeconds: 9})
	if r, _ := w.Report(); r.RequestsPerSecond > 45 {
		t.Errorf("a spike of 1,000 requests in 5 s reported as %v/s over the window", r.RequestsPerSecond)
	}
	// HAProxy reloaded (a new worker) or the router restarted: counters start again from zero.
	// What they had counted is carried: the rate goes on, never negative, never a gap.
	steady := Window{Span: 30 * time.Second}
	for i := range 7 {
		s := float64(i * 5)
		steady.Add(Counters{At: t0.Add(time.Duration(i*5) * time.Second), Requests: 10 * s, CPUSeconds: 0.2 * s})
	}
	// At 35 s the worker restarted 5 s ago and has counted 50 requests since.
	steady.Add(Counters{At: t0.Add(35 * time.Second), Requests: 50, CPUSeconds: 1})
	steady.Add(Counters{At: t0.Add(40 * time.Second), Requests: 100, CPUSeconds: 2})
	if r, ok := steady.Report(); !ok || r.RequestsPerSecond < 9 || r.RequestsPerSecond > 11 || r.CPUMillicores < 0 {
		t.Errorf("across a counter reset: %+v %v, want about 10 requests/s", r, ok)
	}
	// A clock that went back starts the window anew.
	steady.Add(Counters{At: t0, Requests: 5})
	if _, ok := steady.Report(); ok {
		t.Error("a report across a clock that went back")
	}
}
