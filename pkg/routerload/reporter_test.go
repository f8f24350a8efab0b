package routerload

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/shardgate/shardgate/pkg/names"
)

// TestReporter: the reporter scrapes its router, renews its pod's Lease with the rates over its
// window (owned by the pod, so it goes with it), and at steady state costs its API server one
// update per renewal, no read.
func TestReporter(t *testing.T) {
	var requests float64
	router := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "traefik_entrypoint_requests_total{code=\"200\",entrypoint=\"web\"} %g\n", requests)
	}))
	defer router.Close()
	cs := fake.NewClientset()
	r := &Reporter{NewClient: func() (kubernetes.Interface, error) { return cs, nil }, Namespace: names.Namespace,
		Shard: "edge", Pod: "router-edge-1", PodUID: "uid-1", MetricsURL: router.URL, Format: FormatTraefik,
		AdminEntryPoint: "traefik", Interval: 5 * time.Second, Renew: 10 * time.Second, Window: 30 * time.Second,
		LeaseSeconds: 30, HTTP: router.Client()}
	r.window.Span = r.Window
	t0 := time.Unix(1000, 0)
	for i := range 8 { // 20 requests/s, scraped every 5 s
		requests = float64(i * 100)
		if err := r.step(context.Background(), t0.Add(time.Duration(i*5)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	l, err := cs.CoordinationV1().Leases(names.Namespace).Get(context.Background(), names.RouterLoadLeaseName("edge",
		"router-edge-1"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rep, ok := ParseLease(l, t0.Add(35*time.Second))
	if !ok || rep.RequestsPerSecond != 20 || rep.Pod != "router-edge-1" || len(l.OwnerReferences) != 1 ||
		l.OwnerReferences[0].UID != "uid-1" {
		t.Fatalf("report %+v %v, lease %+v", rep, ok, l.ObjectMeta)
	}
	var reads, writes int
	for _, a := range cs.Actions() {
		switch a.GetVerb() {
		case "get":
			reads++
		case "create", "update":
			writes++
		}
	}
	// Renewals at 5 s (the first report), 15, 25 and 35 s: one read before the first write only.
	if reads != 2 || writes != 4 { // the test's own Get above is the second read
		t.Errorf("%d reads and %d writes for four renewals", reads, writes)
	}
	if !strings.Contains(l.Annotations[ReportAnnotation], "rps=20.00") {
		t.Errorf("annotation %q", l.Annotations[ReportAnnotation])
	}
}
