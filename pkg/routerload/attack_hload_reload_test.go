package routerload

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestAttackHLoadReloadsReadAsIdle: HAProxy's counters belong to the worker process, and the
// haproxytech controller reloads HAProxy (a new worker, counters from 0) whenever the runtime API
// cannot apply a change: a tenant's new Service (a new backend), an edit of its Service's backend,
// its TLS Secret rewritten ("certificates updated"), its Deployment scaled past the server slots.
// With --sync-period=1s a tenant (or ordinary churn in a shared cluster) reloads the shard's
// routers as often as every second. Window.Add only restarts when the summed counter goes down
// from one scrape to the next; a worker reloaded at the same phase of every 5 s scrape reads about
// the same figure at every scrape, so nothing goes down and the rate is ~0. The router serves
// 1,000 requests/s; the report says 0: LeastUtilized sends other tenants' routes to the
// "idle" shard and routers that follow load scale down under full load.
func TestAttackHLoadReloadsReadAsIdle(t *testing.T) {
	const rps = 1000.0
	for _, reloadEvery := range []float64{1, 5} {
		t.Run(fmt.Sprintf("reload every %gs", reloadEvery), func(t *testing.T) {
			w := Window{Span: 30 * time.Second}
			t0 := time.Unix(1000, 0)
			var reports []float64
			for i := range 20 {
				now := float64(i*5) + 1.3 // the reporter scrapes every 5 s
				sinceReload := now - float64(int(now/reloadEvery))*reloadEvery
				// Real scrapes carry the worker's start time (whole seconds), as HAProxy exports it.
				started := float64(t0.Unix()) + now - sinceReload
				scrape := fmt.Sprintf("haproxy_process_start_time_seconds %.0f\n"+
					"haproxy_frontend_http_requests_total{proxy=\"stats\"} %d\n"+
					"haproxy_frontend_http_requests_total{proxy=\"http\"} %g\n"+
					"haproxy_frontend_http_requests_total{proxy=\"https\"} %g\n", started, i, rps/2*sinceReload, rps/2*sinceReload)
				c, err := Parse(FormatHAProxy, strings.NewReader(scrape), "stats,healthz",
					t0.Add(time.Duration(now*float64(time.Second))))
				if err != nil {
					t.Fatal(err)
				}
				w.Add(c)
				if r, ok := w.Report(); ok && i >= 6 { // past the first window
					reports = append(reports, r.RequestsPerSecond)
				}
			}
			if len(reports) == 0 {
				t.Fatalf("a router serving %.0f requests/s reports nothing for a minute: its load goes Unknown", rps)
			}
			for _, got := range reports {
				if got < rps/2 {
					t.Fatalf("a router serving %.0f requests/s, reloaded every %gs, reports %v requests/s", rps, reloadEvery, reports)
				}
			}
		})
	}
}
