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
garbage line without value
traefik_entrypoint_requests_total{entrypoint="web"} NaN
`

func TestParseTraefik(t *testing.T) {
	at := time.Unix(100, 0)
	c, err := Parse(FormatTraefik, strings.NewReader(traefikScrape), "traefik", at)
	if err != nil {
		t.Fatal(err)
	}
	want := Counters{At: at, Requests: 120, BytesIn: 1000, BytesOut: 4000, OpenConnections: 3, CPUSeconds: 12.5, MemoryBytes: 5.2e7}
	if c != want {
		t.Errorf("got %+v want %+v", c, want)
	}
	if _, err := Parse("nginx", strings.NewReader(""), "", at); err == nil {
		t.Error("an unknown format was read")
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
	// The router restarted: counters go down, the window starts anew (no negative rate).
	w.Add(Counters{At: t0.Add(55 * time.Second), Requests: 3})
	if _, ok := w.Report(); ok {
		t.Error("a report across a counter reset")
	}
	w.Add(Counters{At: t0.Add(60 * time.Second), Requests: 53})
	if r, ok := w.Report(); !ok || r.RequestsPerSecond != 10 {
		t.Errorf("after the reset: %+v %v", r, ok)
	}
}
