package admission

import (
	"net/http"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

const (
	// maxBody bounds a review's body: an UPDATE carries the object and the old one, each at most
	// maxObject, in a small envelope. controller-runtime would read 7 MiB (and allocate ~3x that)
	// before Review could refuse it.
	maxBody = 2*maxObject + 64<<10
	// bodyTime bounds how long a review's body may take to arrive: the API server sends it at
	// once and gives up after the configuration's timeoutSeconds (at most 30 s).
	bodyTime = 10 * time.Second
)

// reviewing lets one review run at a time, its body read included: the port authenticates no
// caller, and without it any number of slow bodies could be held in memory at once (each up to
// maxBody), besides the CPU of their reviews, in the process that keeps every cluster's routes,
// DNS and status. IngressProfiles are written by an operator, a few at a time.
var reviewing = make(chan struct{}, 1)

// Handler serves ProfileValidator's reviews one at a time, each waiting no longer than its caller
// (the API server then fails open) and reading no more than maxBody within bodyTime.
func Handler(defaultZone string) http.Handler {
	review := &webhook.Admission{Handler: &ProfileValidator{DefaultZone: defaultZone}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case reviewing <- struct{}{}:
			defer func() { <-reviewing }()
		case <-r.Context().Done():
			http.Error(w, "too many IngressProfile reviews at once", http.StatusServiceUnavailable)
			return
		}
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(bodyTime)) // unsupported in tests
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		review.ServeHTTP(w, r)
	})
}
