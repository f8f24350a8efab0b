package tokenauth

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// clusterIngresses is the status page's permission (statuspage.Permission).
var clusterIngresses = Permission{
	Resource:    &authorizationv1.ResourceAttributes{Group: "shardgate.io", Resource: "clusteringresses", Verb: "get"},
	Description: "get clusteringresses.shardgate.io in all namespaces",
}

// reviewer answers TokenReviews and SubjectAccessReviews as an API server would for three
// tokens: "admin" (may get clusteringresses), "viewer" (authenticates, may not), anything else
// (does not authenticate); "broken" makes the API server fail.
func reviewer(t *testing.T) (*Authorizer, *int) {
	cs := fake.NewClientset()
	reviews := 0
	cs.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		reviews++
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		switch tr.Spec.Token {
		case "admin", "viewer":
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: tr.Spec.Token}}
		case "broken":
			return true, nil, errors.New("etcdserver: request timed out")
		default:
			if strings.HasPrefix(tr.Spec.Token, "sa-") { // any ServiceAccount's token in the seed
				tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: tr.Spec.Token}}
			}
		}
		return true, tr, nil
	})
	cs.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		ra := sar.Spec.ResourceAttributes
		if ra == nil || ra.Group != "shardgate.io" || ra.Resource != "clusteringresses" || ra.Verb != "get" || ra.Namespace != "" {
			t.Errorf("unexpected access review: %+v", ra)
		}
		sar.Status.Allowed = sar.Spec.User == "admin"
		return true, sar, nil
	})
	clock := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	return &Authorizer{Authn: cs.AuthenticationV1().TokenReviews(), Authz: cs.AuthorizationV1().SubjectAccessReviews(),
		Permission: clusterIngresses, Now: func() time.Time { return clock }}, &reviews
}

func TestAuthorizer(t *testing.T) {
	a, reviews := reviewer(t)
	h := a.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("page")) }))
	for _, tc := range []struct {
		name, header string
		want         int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"not a bearer token", "Basic YWRtaW46YWRtaW4=", http.StatusUnauthorized},
		{"unknown token", "Bearer stolen", http.StatusUnauthorized},
		{"authenticated, not allowed", "Bearer viewer", http.StatusForbidden},
		{"allowed", "Bearer admin", http.StatusOK},
		{"API server failing", "Bearer broken", http.StatusServiceUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Fatalf("got %d, want %d (%s)", rec.Code, tc.want, rec.Body.String())
			}
			if tc.want == http.StatusOK && rec.Body.String() != "page" {
				t.Fatalf("body %q", rec.Body.String())
			}
		})
	}
	// Decisions are cached for a minute; a failing API server's answer is not.
	before := *reviews
	for _, tok := range []string{"admin", "viewer", "stolen"} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	if *reviews != before {
		t.Fatalf("cached decisions reviewed again: %d reviews", *reviews-before)
	}
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("Authorization", "Bearer broken")
	h.ServeHTTP(httptest.NewRecorder(), req)
	if *reviews != before+1 {
		t.Fatal("a failed review was cached")
	}
}

func status(h http.Handler, token string) int {
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

// TestUnknownTokensAreRateLimited: a flood of tokens that do not authenticate costs the seed's
// API server at most the limiter's burst of TokenReviews (then 429), refills at its rate, and
// never holds back a token that authenticated before, even once its answer expired.
func TestUnknownTokensAreRateLimited(t *testing.T) {
	a, reviews := reviewer(t)
	now := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	a.Now = func() time.Time { return now }
	h := a.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	if got := status(h, "admin"); got != http.StatusOK {
		t.Fatalf("admin: %d", got)
	}
	// Admin's answer expires; the bucket is full again by then.
	now = now.Add(decisionTTL + time.Millisecond)
	before := *reviews
	limited := 0
	for i := range 1000 {
		switch status(h, fmt.Sprintf("guess-%d", i)) {
		case http.StatusTooManyRequests:
			limited++
		case http.StatusUnauthorized:
		default:
			t.Fatalf("guess %d: unexpected answer", i)
		}
	}
	if n := *reviews - before; n != unknownReviewBurst || limited != 1000-n {
		t.Fatalf("1000 unknown tokens: %d TokenReviews, %d limited; want %d reviews", n, limited, unknownReviewBurst)
	}
	// The bucket is empty: admin, known to authenticate, is reviewed again at once.
	before = *reviews
	if got := status(h, "admin"); got != http.StatusOK || *reviews != before+1 {
		t.Fatalf("admin after the flood: %d, %d reviews", got, *reviews-before)
	}
	// A second later the bucket has refilled by the rate.
	now = now.Add(time.Second)
	before = *reviews
	for i := range 100 {
		status(h, fmt.Sprintf("later-%d", i))
	}
	if n := *reviews - before; n != unknownReviewsPerSecond {
		t.Fatalf("a second later: %d TokenReviews, want %d", n, unknownReviewsPerSecond)
	}
}

// TestRefusedTokensDoNotEvictAllowedOnes: more refused tokens than the cache holds (reviewed, the
// limiter off), whether they do not authenticate or are any ServiceAccount's token in the seed
// without the permission (reviewed main flushed the administrators' answers for those), leave the
// answers for tokens let through where they are.
func TestRefusedTokensDoNotEvictAllowedOnes(t *testing.T) {
	a, reviews := reviewer(t)
	a.Unknown = rate.NewLimiter(rate.Inf, 0)
	h := a.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	if status(h, "admin") != http.StatusOK || status(h, "viewer") != http.StatusForbidden {
		t.Fatal("admin and viewer")
	}
	for i := range 3 * maxDecisions {
		if got := status(h, fmt.Sprintf("guess-%d", i)); got != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d", i, got)
		}
		if got := status(h, fmt.Sprintf("sa-%d", i)); got != http.StatusForbidden {
			t.Fatalf("sa %d: %d", i, got)
		}
	}
	before := *reviews
	if status(h, "admin") != http.StatusOK || *reviews != before {
		t.Fatalf("the allowed token was reviewed again after the flood: %d reviews", *reviews-before)
	}
}

// TestNonResourcePermission: a permission on a non-resource URL (/metrics) is asked as exactly
// that, with the user, groups and extra the TokenReview named, and refusals name it.
func TestNonResourcePermission(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{
			Username: tr.Spec.Token, Groups: []string{"scrapers"}, Extra: map[string]authenticationv1.ExtraValue{"k": {"v"}}}}
		return true, tr, nil
	})
	var asked []authorizationv1.SubjectAccessReviewSpec
	cs.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		asked = append(asked, sar.Spec)
		sar.Status.Allowed = sar.Spec.User == "prometheus"
		return true, sar, nil
	})
	a := &Authorizer{Authn: cs.AuthenticationV1().TokenReviews(), Authz: cs.AuthorizationV1().SubjectAccessReviews(),
		Permission: Permission{NonResource: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
			Description: "get the non-resource URL /metrics"}}
	h := a.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics")) }))
	if got := status(h, "prometheus"); got != http.StatusOK {
		t.Fatalf("prometheus: %d", got)
	}
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Authorization", "Bearer someone")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "may not get the non-resource URL /metrics") {
		t.Fatalf("someone: %d %q", rec.Code, rec.Body.String())
	}
	want := authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}
	for _, spec := range asked {
		if spec.ResourceAttributes != nil || spec.NonResourceAttributes == nil || *spec.NonResourceAttributes != want ||
			fmt.Sprint(spec.Groups, spec.Extra) != "[scrapers] map[k:[v]]" {
			t.Errorf("access review %+v", spec)
		}
	}
	if len(asked) != 2 {
		t.Fatalf("%d access reviews, want 2", len(asked))
	}
}
