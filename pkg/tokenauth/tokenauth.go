// Package tokenauth guards an HTTP endpoint of the controller with the seed's own access control:
// a request's bearer token is reviewed by the seed's API server (TokenReview) and the user it
// names must hold a permission there (SubjectAccessReview). The status page and /metrics use it.
package tokenauth

import (
	"context"
	"crypto/sha256"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authnclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authzclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
)

// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// decisionTTL is how long a token's answer is reused: a browser loads a page and its
// refreshes without a TokenReview each, and a revoked token is refused within a minute (as
// kube-rbac-proxy caches its reviews). Each of the two caches holds at most maxDecisions.
const (
	decisionTTL  = time.Minute
	maxDecisions = 1024
)

// A token not let through before costs a TokenReview at the seed's API server, and anyone who
// reaches the endpoint can send them: such reviews are held to unknownReviewsPerSecond (a burst
// of unknownReviewBurst) per client address, so one flooding source cannot lock a new scraper
// token out from another, and to allReviewsPerSecond (allReviewBurst) for all sources together.
// The administrators' and dashboards' tokens, once let through, are never held back.
const (
	unknownReviewsPerSecond = 5
	unknownReviewBurst      = 20
	allReviewsPerSecond     = 50
	allReviewBurst          = 100
	// maxSources bounds the per-address limiters (all are forgotten when it is reached).
	maxSources = 1024
	// maxTokenBytes: no ServiceAccount or OIDC token comes near it; a longer one is refused
	// without a review, so the API server is never sent megabytes of nonsense.
	maxTokenBytes = 16 << 10
)

// Permission is what a token's user must be allowed at the seed: a resource or a non-resource
// URL, as in a SubjectAccessReview (exactly one of the two).
type Permission struct {
	Resource    *authorizationv1.ResourceAttributes
	NonResource *authorizationv1.NonResourceAttributes
	// Description names it in refusals, e.g. "get /metrics".
	Description string
}

// Authorizer lets a request through when its bearer token authenticates at the seed's API
// server (TokenReview) and the user it names holds Permission (SubjectAccessReview). Unlike
// controller-runtime's metrics filter, a token that does not authenticate is a 401 (not a 500
// and an error logged), and reviews of unknown tokens are rate limited.
type Authorizer struct {
	Authn      authnclient.TokenReviewInterface
	Authz      authzclient.SubjectAccessReviewInterface
	Permission Permission
	Now        func() time.Time
	// Unknown limits the reviews of tokens not let through before, all sources together (nil:
	// the defaults above); each client address has its own limit too (none when Unknown's is
	// rate.Inf).
	Unknown *rate.Limiter
	sources map[string]*rate.Limiter

	mu sync.Mutex
	// allowed holds the answers for tokens let through, refused those for tokens that did not
	// authenticate or lack the permission: a flood of bad tokens, or of any ServiceAccount's
	// token in the seed, fills only refused, never evicting the answers legitimate users rely on.
	allowed, refused map[[32]byte]decision
}

type decision struct {
	status int // http.StatusOK, StatusUnauthorized or StatusForbidden
	until  time.Time
}

// Wrap answers 401 without a valid token and 403 without the permission; the token itself is
// never logged or echoed (only a hash of it is kept, for the cache).
func (a *Authorizer) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearerToken(r.Header.Get("Authorization"))
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="shardgate"`)
			http.Error(w, "a bearer token whose user may "+a.Permission.Description+" is required", http.StatusUnauthorized)
			return
		}
		switch a.decide(r.Context(), token, clientAddress(r)) {
		case http.StatusOK:
			next.ServeHTTP(w, r)
		case http.StatusUnauthorized:
			w.Header().Set("WWW-Authenticate", `Bearer realm="shardgate"`)
			http.Error(w, "the token does not authenticate", http.StatusUnauthorized)
		case http.StatusForbidden:
			http.Error(w, "the token's user may not "+a.Permission.Description, http.StatusForbidden)
		case http.StatusTooManyRequests:
			w.Header().Set("Retry-After", "1")
			http.Error(w, "too many unknown tokens are being reviewed; try again", http.StatusTooManyRequests)
		default:
			http.Error(w, "the seed's API server could not review the token; try again", http.StatusServiceUnavailable)
		}
	})
}

// bearerToken reads "Bearer <token>" (the scheme in any case, RFC 7235).
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	token = strings.TrimSpace(token)
	return token, ok && strings.EqualFold(scheme, "Bearer") && token != ""
}

// clientAddress is the request's source address without its port.
func clientAddress(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

func (a *Authorizer) decide(ctx context.Context, token, source string) int {
	if len(token) > maxTokenBytes {
		return http.StatusUnauthorized
	}
	key := sha256.Sum256([]byte(token))
	now := a.now()
	a.mu.Lock()
	d, known := a.allowed[key] // known: let through before
	if !known {
		d = a.refused[key]
	}
	all, own := a.limiters(source)
	a.mu.Unlock()
	if now.Before(d.until) {
		return d.status
	}
	// A token let through before (its answer expired) is reviewed again at once.
	if !known && (!own.AllowN(now, 1) || !all.AllowN(now, 1)) {
		return http.StatusTooManyRequests
	}
	status := a.review(ctx, token)
	if status == http.StatusServiceUnavailable {
		return status // not cached: the next request asks again
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	d = decision{status: status, until: now.Add(decisionTTL)}
	if status == http.StatusOK {
		delete(a.refused, key)
		a.allowed = remember(a.allowed, key, d, now)
	} else {
		delete(a.allowed, key)
		a.refused = remember(a.refused, key, d, now)
	}
	return status
}

// remember adds d to m, bounded to maxDecisions: expired answers go first, and when none has
// expired the map starts over (only its own kind of token can fill it).
func remember(m map[[32]byte]decision, key [32]byte, d decision, now time.Time) map[[32]byte]decision {
	if m == nil {
		m = map[[32]byte]decision{}
	}
	if _, ok := m[key]; !ok && len(m) >= maxDecisions {
		for k, old := range m {
			if !now.Before(old.until) {
				delete(m, k)
			}
		}
		if len(m) >= maxDecisions {
			m = map[[32]byte]decision{}
		}
	}
	m[key] = d
	return m
}

// limiters are the unknown tokens' review limiters, for all sources and for source; a.mu is held.
func (a *Authorizer) limiters(source string) (all, own *rate.Limiter) {
	if a.Unknown == nil {
		a.Unknown = rate.NewLimiter(allReviewsPerSecond, allReviewBurst)
	}
	own = a.sources[source]
	if own == nil {
		if a.sources == nil || len(a.sources) >= maxSources {
			a.sources = map[string]*rate.Limiter{}
		}
		own = rate.NewLimiter(unknownReviewsPerSecond, unknownReviewBurst)
		if a.Unknown.Limit() == rate.Inf {
			own = rate.NewLimiter(rate.Inf, 0) // no limit at all
		}
		a.sources[source] = own
	}
	return a.Unknown, own
}

func (a *Authorizer) review(ctx context.Context, token string) int {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tr, err := a.Authn.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return http.StatusServiceUnavailable
	}
	if !tr.Status.Authenticated {
		return http.StatusUnauthorized
	}
	u := tr.Status.User
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range u.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar, err := a.Authz.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra,
		ResourceAttributes: a.Permission.Resource, NonResourceAttributes: a.Permission.NonResource,
	}}, metav1.CreateOptions{})
	if err != nil {
		return http.StatusServiceUnavailable
	}
	if !sar.Status.Allowed {
		return http.StatusForbidden
	}
	return http.StatusOK
}

func (a *Authorizer) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}
