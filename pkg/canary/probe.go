// Package canary decides whether a shard's routes are served, from the seed as a user sees them:
// the shard's canary host must resolve and every address must answer the canary request through
// the shard's routers. Probe does the asking through functions it is given, so it is tested
// without a network; Condition turns the outcome into RoutesServing.
package canary

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// MaxAddresses bounds the addresses asked per check: a shard published on 50 nodes costs three
// requests, not 50 (which ones rotates with the DNS answer's order, sorted here, so the same
// three are asked: a broken node among them shows every time).
const MaxAddresses = 3

// Result is one check of one shard.
type Result struct {
	Host      string
	Addresses []string
	// Reason is Serving, NotResolving, AddressRefused or NotAnswering; Failure says what failed ("" when serving).
	Reason  string
	Failure string
}

// Resolve returns a name's IPv4 addresses; Get requests url with the Host header host and
// returns the status and the start of the body.
type (
	Resolve func(ctx context.Context, name string) ([]string, error)
	Get     func(ctx context.Context, url, host string) (int, string, error)
)

// Request is what a shard's canary route asks (Path) and what its routers answer (Body, with
// status 200): each router flavour has its own (render.Flavour's Canary).
type Request struct {
	Path, Body string
}

// Probe resolves host and asks up to MaxAddresses of its addresses for req.Path on port. An
// address in refused is not asked: the check fails with AddressRefused.
func Probe(ctx context.Context, host string, port int, req Request, refused Refused, resolve Resolve, get Get) Result {
	r := Result{Host: host}
	addrs, err := resolve(ctx, host)
	if err != nil {
		r.Reason, r.Failure = v1alpha1.ReasonNotResolving, fmt.Sprintf("%s does not resolve: %v", host, err)
		return r
	}
	if len(addrs) == 0 {
		r.Reason, r.Failure = v1alpha1.ReasonNotResolving, host+" has no address"
		return r
	}
	sort.Strings(addrs)
	if len(addrs) > MaxAddresses {
		addrs = addrs[:MaxAddresses]
	}
	r.Addresses = addrs
	for _, a := range addrs {
		if why := refused.Refuses(a); why != "" {
			r.Reason, r.Failure = v1alpha1.ReasonAddressRefused, fmt.Sprintf("%s resolves to %s: not requested, %s", host, a, why)
			return r
		}
	}
	for _, a := range addrs {
		url := "http://" + net.JoinHostPort(a, strconv.Itoa(port)) + req.Path
		code, body, err := get(ctx, url, host)
		switch {
		case err != nil:
			r.Reason, r.Failure = v1alpha1.ReasonNotAnswering, fmt.Sprintf("%s (Host %s): %v", url, host, err)
			return r
		case code != 200 || strings.TrimSpace(body) != req.Body:
			// Only the status: the body is whatever answered at a tenant-chosen address, and the
			// condition is read by everyone who may read the cluster's status.
			r.Reason, r.Failure = v1alpha1.ReasonNotAnswering,
				fmt.Sprintf("%s (Host %s) answered %d, not the routers' 200 %s", url, host, code, req.Body)
			return r
		}
	}
	r.Reason = v1alpha1.ReasonServing
	return r
}

// Condition is RoutesServing for r. A condition that failed (the name did not resolve, an address
// did not answer) and turns True keeps that failure in its message, so that a flap is visible
// after it healed; waiting for a first router is not a failure of the routes.
func Condition(prev *metav1.Condition, r Result) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionRoutesServing, Reason: r.Reason}
	if r.Reason != v1alpha1.ReasonServing {
		c.Status, c.Message = metav1.ConditionFalse, r.Failure
		return c
	}
	c.Status = metav1.ConditionTrue
	c.Message = fmt.Sprintf("%s answers through the shard's routers at %s", r.Host, strings.Join(r.Addresses, ", ")) +
		LastFailure(prev)
	return c
}

// LastFailure is the "; last failure" suffix a condition following prev keeps: prev's own failure,
// or the one prev kept. A shard whose routers were reported not ready in between (the kubelet's
// readiness probe saw the wedged router after the canary did) keeps it too (NoRouterReady).
func LastFailure(prev *metav1.Condition) string {
	switch {
	case prev == nil:
		return ""
	case prev.Reason == v1alpha1.ReasonNotAnswering || prev.Reason == v1alpha1.ReasonNotResolving ||
		prev.Reason == v1alpha1.ReasonAddressRefused:
		return fmt.Sprintf("; last failure (from %s): %s", prev.LastTransitionTime.UTC().Format(time.RFC3339), prev.Message)
	case strings.Contains(prev.Message, "; last failure"):
		_, last, _ := strings.Cut(prev.Message, "; last failure")
		return "; last failure" + last
	}
	return ""
}
