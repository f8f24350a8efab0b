package admission

import (
	"fmt"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
)

// TestReview29ReviewIsLinearInTheRequest (review29, High, anyone who reaches the webhook port: S
// with a pod in the seed, any seed workload): the webhook port is unauthenticated HTTPS in the
// pod network, and a request sent to it directly skips the API server's CRD schema (maxItems,
// maxLength), so an object can hold as many invalid entries as controller-runtime's 7 MiB body
// limit allows. Review renders every field error with errs.ToAggregate().Error() before bound()
// cuts it to 2 KiB, and apimachinery's aggregate.Error concatenates its messages one by one
// (quadratic): 80 KB of invalid shard names cost ~2 s of CPU and ~6.5 GB of allocation, a 3 MB
// request ran more than 10 minutes on one core (measured, then killed). Review ignores its
// context, so a client that hangs up does not stop it. A few such requests keep the seed
// controller's cores busy (the same process allocates, publishes DNS and reports status for
// every cluster). Fix: refuse an object past a few hundred KiB (the CRD's own bounds), build the
// message from at most the errors that fit in maxMessage, and bound concurrent reviews.
func TestReview29ReviewIsLinearInTheRequest(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"spec":{"shards":[`)
	for i := 0; b.Len() < 160<<10; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"name":"A%d"}`, i) // upper case: not a DNS label, one error each
	}
	b.WriteString(`]}}`)
	req := profileReview(admissionv1.Create, []byte(b.String()), nil)
	var before, after goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&before)
	start := time.Now()
	r := Review(req, "seed.example")
	took := time.Since(start)
	goruntime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("a %d-byte review: %s, %d MB allocated, allowed %v", b.Len(), took, allocated>>20, r.Allowed)
	if allocated > 256<<20 {
		t.Fatalf("one %d KB review allocated %d MB (and took %s) for a message of at most %d bytes: the work is quadratic in the request",
			b.Len()>>10, allocated>>20, took, maxMessage)
	}
}
