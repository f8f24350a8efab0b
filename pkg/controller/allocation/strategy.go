package allocation

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/allocation"
)

// extenderPassBudget bounds the time one allocation pass spends asking an extender: past it, the
// pass's other new routes are decided by the built-in strategy (and the condition says so), so a
// slow extender never holds a cluster's allocation for more than this.
const extenderPassBudget = 10 * time.Second

// defaultExtenderTimeout is one request's, unless the profile says otherwise.
const defaultExtenderTimeout = 2 * time.Second

// maxExtenderAnswer bounds what is read of an extender's answer.
const maxExtenderAnswer = 64 << 10

// strategy builds the cluster's strategy for one pass: the built-in one, under the profile's
// score, under its extender; fallbacks counts what they could not decide.
func (r *Reconciler) strategy(ctx context.Context, cluster string, a v1alpha1.AllocationSettings,
) (allocation.Strategy, *allocation.Fallbacks, error) {
	s, err := allocation.StrategyFor(a.Strategy)
	if err != nil {
		return nil, nil, err
	}
	f := &allocation.Fallbacks{}
	if a.Score != "" {
		score, err := allocation.CompileScore(a.Score)
		if err != nil {
			s = failing{fallback: s, problem: err.Error(), f: f}
		} else {
			s = allocation.Scored(score, s, f)
		}
	}
	if a.Extender != nil {
		ask, err := r.extenders.ask(ctx, cluster, a.Extender, time.Now().Add(extenderPassBudget))
		if err != nil {
			s = failing{fallback: s, problem: "extender: " + err.Error(), f: f}
		} else {
			s = allocation.Extended(ask, s, f)
		}
	}
	return s, f, nil
}

// failing is a score or extender that cannot be used at all (the profile's validation says why
// too): the fallback decides every pick, and each is counted.
type failing struct {
	fallback allocation.Strategy
	problem  string
	f        *allocation.Fallbacks
}

func (s failing) Pick(r allocation.Route, c []allocation.ShardLoad) string {
	s.f.FellBack(r, s.problem)
	return s.fallback.Pick(r, c)
}

// customStrategyCondition is CustomStrategyApplied after a pass (nil without a score or extender);
// a pass with no new route keeps what the last one said.
func customStrategyCondition(a v1alpha1.AllocationSettings, f *allocation.Fallbacks, conds []metav1.Condition,
) *metav1.Condition {
	if a.Score == "" && a.Extender == nil {
		return nil
	}
	c := &metav1.Condition{Type: v1alpha1.ConditionCustomStrategyApplied}
	switch {
	case f.Fell > 0:
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonFellBack
		c.Message = fmt.Sprintf("%d of %d new routes not decided as configured (%s decided instead): %s", f.Fell, f.Picks,
			nextInLine(a), f.FirstProblem)
	case f.Picks > 0:
		c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.ReasonApplied
		c.Message = fmt.Sprintf("%d new route(s) decided by the profile's score or extender", f.Picks)
	default:
		if prev := meta.FindStatusCondition(conds, v1alpha1.ConditionCustomStrategyApplied); prev != nil {
			return prev
		}
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, v1alpha1.ReasonNoNewRoutes, "no new route decided yet"
	}
	return c
}

// nextInLine names what decides when the extender or score cannot: the score under an
// extender, then the built-in strategy.
func nextInLine(a v1alpha1.AllocationSettings) string {
	s := string(a.Strategy)
	if s == "" {
		s = string(v1alpha1.StrategyLeastRoutes)
	}
	if a.Extender != nil && a.Score != "" {
		return "the score, or " + s + " where it fails"
	}
	return s
}

// extenders keeps one HTTP client per extender (URL, CA bundle, timeout), so that passes reuse
// connections; a profile's edits leave at most maxExtenderClients behind.
type extenders struct {
	mu      sync.Mutex
	clients map[extenderKey]*http.Client
}

type extenderKey struct {
	url, caBundle string
	timeout       time.Duration
}

// maxExtenderClients bounds the clients kept: past it they are all dropped (their idle
// connections closed) and built again as passes need them.
const maxExtenderClients = 32

// ExtenderRequest is what an extender is sent for one new route.
type ExtenderRequest struct {
	// Cluster is the ClusterIngress (namespace/name).
	Cluster    string              `json:"cluster"`
	Route      ExtenderRoute       `json:"route"`
	Candidates []ExtenderCandidate `json:"candidates"`
}

// ExtenderRoute is the route (allocation.ScoreVariables' route).
type ExtenderRoute struct {
	Kind            string            `json:"kind"`
	Namespace       string            `json:"namespace"`
	Name            string            `json:"name"`
	Labels          map[string]string `json:"labels,omitempty"`
	NamespaceLabels map[string]string `json:"namespaceLabels,omitempty"`
	Hosts           []string          `json:"hosts,omitempty"`
}

// ExtenderCandidate is a shard the route may go to.
type ExtenderCandidate struct {
	Name              string            `json:"name"`
	Labels            map[string]string `json:"labels,omitempty"`
	Routes            int               `json:"routes"`
	ReadyRouters      int               `json:"readyRouters"`
	LoadKnown         bool              `json:"loadKnown"`
	Utilization       int32             `json:"utilizationPercent"`
	RequestsPerSecond int64             `json:"requestsPerSecond"`
	Capacity          int32             `json:"capacity"`
}

// ExtenderAnswer is what an extender answers: the shard it picks.
type ExtenderAnswer struct {
	Shard string `json:"shard"`
}

func (e *extenders) client(spec *v1alpha1.AllocationExtender) (*http.Client, error) {
	timeout := defaultExtenderTimeout
	if spec.Timeout != nil && spec.Timeout.Duration > 0 {
		timeout = min(spec.Timeout.Duration, 10*time.Second)
	}
	key := extenderKey{url: spec.URL, caBundle: spec.CABundle, timeout: timeout}
	e.mu.Lock()
	defer e.mu.Unlock()
	if c, ok := e.clients[key]; ok {
		return c, nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(spec.CABundle)) {
		return nil, errors.New("its CA bundle holds no PEM certificate")
	}
	c := &http.Client{Timeout: timeout,
		// Never through a proxy from the environment, never to another URL than the profile's.
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, Proxy: nil,
			MaxIdleConnsPerHost: 2, IdleConnTimeout: time.Minute},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if len(e.clients) >= maxExtenderClients {
		for _, old := range e.clients {
			old.CloseIdleConnections()
		}
		e.clients = nil
	}
	if e.clients == nil {
		e.clients = map[extenderKey]*http.Client{}
	}
	e.clients[key] = c
	return c, nil
}

// ask returns the extender's Ask for one pass, which stops asking at deadline.
func (e *extenders) ask(ctx context.Context, cluster string, spec *v1alpha1.AllocationExtender, deadline time.Time,
) (allocation.Ask, error) {
	c, err := e.client(spec)
	if err != nil {
		return nil, err
	}
	return func(r allocation.Route, cands []allocation.ShardLoad) (string, error) {
		if time.Now().After(deadline) {
			return "", fmt.Errorf("this pass spent its %s of extender time", extenderPassBudget)
		}
		req := ExtenderRequest{Cluster: cluster, Route: ExtenderRoute{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name,
			Labels: r.Labels, NamespaceLabels: r.NamespaceLabels}}
		for _, h := range r.Hosts {
			if h != "" {
				req.Route.Hosts = append(req.Route.Hosts, h)
			}
		}
		for _, s := range cands {
			req.Candidates = append(req.Candidates, ExtenderCandidate{Name: s.Name, Labels: s.Labels, Routes: s.Routes,
				ReadyRouters: s.Capacity, LoadKnown: s.LoadKnown, Utilization: s.Utilization,
				RequestsPerSecond: s.RequestsPerSecond, Capacity: s.CapacityRPS})
		}
		body, err := json.Marshal(req)
		if err != nil {
			return "", err
		}
		// The pass' budget bounds this request too, not only whether it starts.
		rctx, cancel := context.WithDeadline(ctx, deadline)
		defer cancel()
		hr, err := http.NewRequestWithContext(rctx, http.MethodPost, spec.URL, bytes.NewReader(body))
		if err != nil {
			return "", err
		}
		hr.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(hr)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("it answered %s", resp.Status)
		}
		var ans ExtenderAnswer
		if err := json.NewDecoder(io.LimitReader(resp.Body, maxExtenderAnswer)).Decode(&ans); err != nil {
			return "", fmt.Errorf("its answer is not JSON with a shard: %w", err)
		}
		return ans.Shard, nil
	}, nil
}
