package routerload

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/shardgate/shardgate/pkg/names"
)

// TestAttack2LoadReporterKeepsFailedCreateResult: renew keeps "the Lease the last write returned"
// as r.lease, but after a failed Create it keeps client-go's result too, which is an empty,
// nameless Lease, not nil (typed clients return their new object with the error). The next
// renewal skips the read and updates that nameless Lease, which fails again: one failed create
// (a webhook or quota refusing once, AlreadyExists after a restart race) costs a second renewal.
func TestAttack2LoadReporterKeepsFailedCreateResult(t *testing.T) {
	var requests float64
	router := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "traefik_entrypoint_requests_total{code=\"200\",entrypoint=\"web\"} %g\n", requests)
	}))
	defer router.Close()
	cs := fake.NewClientset()
	failed := false
	cs.PrependReactor("create", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if !failed {
			failed = true
			return true, nil, errors.New("refused once")
		}
		return false, nil, nil
	})
	r := &Reporter{NewClient: func() (kubernetes.Interface, error) { return cs, nil }, Namespace: names.Namespace,
		Shard: "edge", Pod: "router-edge-1", PodUID: "uid-1", MetricsURL: router.URL, Format: FormatTraefik,
		AdminEntryPoint: "traefik", Interval: 5 * time.Second, Renew: 10 * time.Second, Window: 30 * time.Second,
		LeaseSeconds: 30, HTTP: router.Client()}
	r.window.Span = r.Window
	t0 := time.Unix(1000, 0)
	var errs []error
	for i := range 3 { // 0 s: no report yet; 5 s: the create fails; 10 s: the retry
		requests = float64(i * 100)
		errs = append(errs, r.step(context.Background(), t0.Add(time.Duration(i*5)*time.Second)))
	}
	if errs[1] == nil {
		t.Fatalf("setup: the first create did not fail (%v)", errs)
	}
	if _, err := cs.CoordinationV1().Leases(names.Namespace).Get(context.Background(),
		names.RouterLoadLeaseName("edge", "router-edge-1"), metav1.GetOptions{}); err != nil {
		t.Errorf("the renewal after one failed create: %v; no Lease (%v)", errs[2], err)
	}
}
