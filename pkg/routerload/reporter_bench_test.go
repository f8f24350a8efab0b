package routerload

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/shardgate/shardgate/pkg/names"
)

// BenchmarkReporterSteadyState prints what one router's load reporter costs its user cluster's API
// server at steady state, counted from the requests it makes over ten simulated minutes (the
// first read and create included), and what a cluster of 100 routers costs it.
func BenchmarkReporterSteadyState(b *testing.B) {
	router := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, `traefik_entrypoint_requests_total{code="200",entrypoint="web"} 1`)
	}))
	defer router.Close()
	for b.Loop() {
		cs := fake.NewClientset()
		r := &Reporter{NewClient: func() (kubernetes.Interface, error) { return cs, nil }, Namespace: names.Namespace,
			Shard: "edge", Pod: "router-edge-1", PodUID: "uid", MetricsURL: router.URL, Format: FormatTraefik,
			AdminEntryPoint: "traefik", Interval: 5 * time.Second, Renew: 10 * time.Second, Window: 30 * time.Second,
			LeaseSeconds: 30, HTTP: router.Client()}
		r.window.Span = r.Window
		const span = 10 * time.Minute
		t0 := time.Unix(0, 0)
		for at := time.Duration(0); at <= span; at += r.Interval {
			if err := r.step(context.Background(), t0.Add(at)); err != nil {
				b.Fatal(err)
			}
		}
		perSecond := float64(len(cs.Actions())) / span.Seconds()
		b.ReportMetric(perSecond, "api-requests/s/router")
		b.Logf("one router's reporter: %d API requests in %s (%.3f/s); 100 routers: %.1f requests/s to their API server; "+
			"the seed sees one Lease event per renewal and writes status at most every 10 s per cluster",
			len(cs.Actions()), span, perSecond, 100*perSecond)
	}
}
