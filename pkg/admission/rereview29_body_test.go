package admission

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestReReview29BodyIsBoundedBeforeTheSemaphore (rereview29, Medium, anyone reaching the webhook
// port: S with a pod in the seed, any seed workload; no NetworkPolicy, no client auth): the
// 512 KiB bound and the one-review-at-a-time semaphore both sit in Handle/Review, but
// controller-runtime's webhook.Admission reads the body (io.ReadAll up to 7 MiB, doubling its
// buffer) and decodes the AdmissionReview before calling Handle, and its http.Server has no
// ReadTimeout. So neither bounds memory: every connection may trickle up to 7 MiB and keep it
// (and, once complete, ~2-3x that in buffers and decoded copies) for as long as it likes, with no
// limit on how many do so at once. Under the chart's 512Mi limit a few dozen such connections
// OOM-kill the seed controller (routes, DNS, status of every cluster), and each restart adds a
// new CA to the caBundle (feeding finding 1). Fix: wrap the registered handler in
// http.MaxBytesHandler at ~2*maxObject plus the envelope, bound in-flight requests (or the
// listener's connections) before the body is read, and set a ReadTimeout (the API server's
// timeoutSeconds is at most 30 s).
func TestReReview29BodyIsBoundedBeforeTheSemaphore(t *testing.T) {
	h := Handler("seed.example")

	// One request past maxObject: what does it cost before Review refuses it?
	big := fmt.Sprintf(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u",`+
		`"kind":{"group":"shardgate.io","version":"v1alpha1","kind":"IngressProfile"},"operation":"CREATE",`+
		`"object":{"metadata":{"annotations":{"a":"%s"}}}}}`, strings.Repeat("x", 7<<20-4096))
	var before, after goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&before)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, ProfilePath, strings.NewReader(big))
	req.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(rec, req)
	goruntime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("a %d MiB review: %d MiB allocated before it was refused: %s", len(big)>>20, allocated>>20, rec.Body.String()[:min(rec.Body.Len(), 200)])

	// Many slow bodies at once: all of them are read concurrently, none waits for the semaphore.
	const n = 8
	var reading atomic.Int32
	var wg sync.WaitGroup
	writers := make([]*io.PipeWriter, n)
	for i := range n {
		pr, pw := io.Pipe()
		writers[i] = pw
		r := httptest.NewRequest(http.MethodPost, ProfilePath, pr)
		r.Header.Set("Content-Type", "application/json")
		wg.Add(1)
		go func() { defer wg.Done(); h.ServeHTTP(httptest.NewRecorder(), r) }()
	}
	chunk := bytes.Repeat([]byte(" "), 1<<20) // leading whitespace: valid JSON so far
	for _, pw := range writers {
		done := make(chan struct{})
		go func() { _, _ = pw.Write(chunk); close(done) }()
		select {
		case <-done:
			reading.Add(1)
		case <-time.After(2 * time.Second):
		}
	}
	for _, pw := range writers {
		_ = pw.CloseWithError(io.ErrUnexpectedEOF)
	}
	wg.Wait()
	t.Logf("%d of %d slow requests had 1 MiB of body each accepted at once", reading.Load(), n)
	// The bound: a body cut at maxBody (~1 MiB), read by io.ReadAll's doubling buffer.
	if allocated > 4*maxBody || reading.Load() > 1 {
		t.Fatalf("a request past maxObject cost %d MiB before it was refused (bound %d KiB), and %d slow bodies were read at once: memory is bounded neither per request nor in total",
			allocated>>20, maxObject>>10, reading.Load())
	}
}
