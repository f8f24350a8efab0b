package allocation

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/allocation"
)

// TestAttackLoadExtenderClientIsReused: extenders.client is meant to keep one HTTP client per
// extender so passes reuse connections, but its map key holds a *metav1.Duration made afresh on
// every call, so the key never matches: every allocation pass of every cluster builds a new
// client and transport (idle connections kept a minute each) and the map grows without end.
func TestAttackLoadExtenderClientIsReused(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	var e extenders
	spec := extenderSpec(srv, time.Second)
	first, err := e.client(spec)
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if _, err := e.client(spec); err != nil {
			t.Fatal(err)
		}
	}
	second, _ := e.client(spec)
	if first != second {
		t.Errorf("the same extender got a new client on the next pass")
	}
	if len(e.clients) != 1 {
		t.Errorf("one extender, %d cached clients after 102 passes (a leak growing with every pass)", len(e.clients))
	}
}

// TestAttackLoadExtenderPassBudgetIsOverrun: the pass budget is only checked before a request is
// sent, and the request runs on the reconcile's context with its own timeout, so a pass that
// starts a request just before its deadline runs past it by up to a whole request timeout (10 s
// of budget plus 10 s of timeout: twice what the comment promises).
func TestAttackLoadExtenderPassBudgetIsOverrun(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(800 * time.Millisecond)
		_ = json.NewEncoder(w).Encode(ExtenderAnswer{Shard: "a"})
	}))
	defer srv.Close()
	var e extenders
	budget := 50 * time.Millisecond
	start := time.Now()
	ask, err := e.ask(context.Background(), "seed/c1", extenderSpec(srv, 2*time.Second), start.Add(budget))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = ask(allocation.Route{Kind: "Ingress", Namespace: "ns", Name: "r"}, []allocation.ShardLoad{{Name: "a"}})
	if spent := time.Since(start); spent > budget+200*time.Millisecond {
		t.Errorf("a pass with %s of extender budget spent %s asking", budget, spent.Round(time.Millisecond))
	}
}

// TestAttackLoadFallbackCountsAndNamesAreWrong: with both a score and an extender, a route the
// extender cannot decide is counted twice (once as fallen back by the extender, once as picked by
// the score it falls back to), and the condition says the profile's built-in strategy decided it
// although the score did: one new route reads "1 of 2 new routes decided by LeastRoutes instead".
func TestAttackLoadFallbackCountsAndNamesAreWrong(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	r := &Reconciler{}
	a := v1alpha1.AllocationSettings{Score: `shard.name == "b" ? 0 : 1`, Extender: extenderSpec(srv, time.Second)}
	s, f, err := r.strategy(context.Background(), "seed/c1", a)
	if err != nil {
		t.Fatal(err)
	}
	got := s.Pick(allocation.Route{Kind: "Ingress", Namespace: "ns", Name: "web"}, []allocation.ShardLoad{{Name: "a"}, {Name: "b"}})
	c := customStrategyCondition(a, f, nil)
	if got != "b" {
		t.Fatalf("setup: the score should have decided (b), got %s", got)
	}
	if !strings.Contains(c.Message, "1 of 1 ") || strings.Contains(c.Message, "decided by LeastRoutes") {
		t.Errorf("one new route, decided by the score after the extender failed; the condition says: %s", c.Message)
	}
}
