package tokenauth

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestAFloodOfGuessesDoesNotLockOutANewAllowedToken (attacker's review): one source flooding
// guesses at 50 a second for a minute does not lock out a token the seed allows, never let
// through before (Prometheus' after the kubelet rotated it, an administrator's fresh
// `kubectl create token`), sent from another address: each address has its own limit (the
// first version had one limit for all, kept empty by the flood: 429).
func TestAFloodOfGuessesDoesNotLockOutANewAllowedToken(t *testing.T) {
	a, _ := reviewer(t)
	now := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	a.Now = func() time.Time { return now }
	h := a.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	from := func(addr, token string) int {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.RemoteAddr = addr
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	guess, limited := 0, 0
	for range 61 { // a minute of flooding at 50 guesses a second, and this second's guesses first
		now = now.Add(time.Second)
		for range 50 {
			if from("10.0.0.66:4242", fmt.Sprintf("guess-%d", guess)) == http.StatusTooManyRequests {
				limited++
			}
			guess++
		}
	}
	if limited == 0 {
		t.Fatal("the flood was never limited")
	}
	if got := from("10.0.0.9:5555", "admin"); got != http.StatusOK {
		t.Fatalf("a new token the seed allows, from another address during a flood of guesses: %d, want 200", got)
	}
}

// TestBearerSchemeIsCaseInsensitive (attacker's review): RFC 7235 §2.1 makes the scheme
// case-insensitive and the API server accepts "bearer"; a scraper sending it is told 401.
func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	a, _ := reviewer(t)
	h := a.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("Authorization", "bearer admin")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("\"bearer admin\": %d, want 200", rec.Code)
	}
}

// TestHugeTokensAreNotSentForReview (attacker's review): a token of hundreds of KiB (net/http
// accepts headers up to 1 MiB) is sent to the seed's API server as a TokenReview; no
// ServiceAccount or OIDC token comes near 16 KiB, so such a token could be refused unreviewed.
func TestHugeTokensAreNotSentForReview(t *testing.T) {
	a, reviews := reviewer(t)
	h := a.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	got := status(h, strings.Repeat("A", 512<<10))
	if *reviews != 0 || got != http.StatusUnauthorized {
		t.Fatalf("a 512 KiB token: %d, and %d TokenReview sent", got, *reviews)
	}
}
