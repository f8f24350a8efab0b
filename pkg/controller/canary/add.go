// Package canary is the canary controller: every interval, for every shard of every user
// cluster, it requests the shard's canary route from the seed as a user would (the name at the
// zone's authoritative servers, then each address through the shard's entry point) and records
// RoutesServing per shard and for the cluster. Unlike a readiness probe it sees what users see:
// a router that is Ready but unreachable, a name that does not resolve, a route that is not
// programmed.
package canary

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"golang.org/x/time/rate"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/canary"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controller/kit"
	"github.com/shardgate/shardgate/pkg/predicates"
)

// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses,verbs=get;list;watch
// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses/status,verbs=get;update;patch

// Config is the canary's settings.
type Config struct {
	Kit    kit.Config
	Access clusteraccess.Access
	// Interval between checks of a cluster.
	Interval time.Duration
	// QPS bounds canary requests a second across all clusters.
	QPS float64
	// Resolve looks canary names up (the DNS verifier's servers, else the system's resolver).
	Resolve canary.Resolve
	// Proxy, when set, carries the canary's connections (a seed that reaches user clusters'
	// routers only through a proxy): http:// tunnels each connection with CONNECT to the router
	// address (a plain HTTP proxy would resolve the canary name itself and ask one address of
	// its choosing), socks5:// connects through SOCKS5.
	Proxy *url.URL
	// Refused: addresses never requested (canary.DefaultRefused plus the operator's).
	Refused canary.Refused
	// NodePorts: the user clusters' node-port range; a NodePort outside it is not requested.
	NodePorts canary.PortRange
	// Concurrency: clusters checked at once.
	Concurrency int
	// Board takes the controller's part of the status.
	Board *cistatus.Board
}

// Add registers the canary controller.
func Add(mgr ctrl.Manager, cfg Config) error {
	dialer := &net.Dialer{Timeout: 3 * time.Second}
	transport := &http.Transport{DisableKeepAlives: true, DialContext: dialer.DialContext} // every check connects anew, as a new user would
	switch {
	case cfg.Proxy != nil && cfg.Proxy.Scheme == "socks5":
		transport.Proxy = http.ProxyURL(cfg.Proxy)
	case cfg.Proxy != nil:
		transport.DialContext = connectDialer(dialer, cfg.Proxy.Host)
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	r := &Reconciler{Client: mgr.GetClient(), Access: cfg.Access, Interval: cfg.Interval, Resolve: cfg.Resolve, Refused: cfg.Refused, NodePorts: cfg.NodePorts,
		Get: httpGet(client), Limiter: rate.NewLimiter(rate.Limit(cfg.QPS), max(1, int(cfg.QPS))), Board: cfg.Board}
	return kit.New(mgr, "canary", cfg.Kit).Concurrency(cfg.Concurrency).
		// Checks are timed (RequeueAfter); spec, deletion and the domain start one at once.
		For(&v1alpha1.ClusterIngress{}, builder.WithPredicates(predicate.Or(predicates.MetadataOrSpecChanged, predicates.DomainChanged, predicates.ClaimsChanged,
			predicates.RunningFlavoursChanged))).
		Complete(r)
}

// connectDialer opens each connection as a CONNECT tunnel through the HTTP proxy at proxyAddr,
// so that the request goes to exactly the address asked, with the canary host as Host.
func connectDialer(d *net.Dialer, proxyAddr string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, proxyAddr)
		if err != nil {
			return nil, err
		}
		if deadline, ok := ctx.Deadline(); ok {
			_ = conn.SetDeadline(deadline)
		}
		req := &http.Request{Method: http.MethodConnect, URL: &url.URL{Opaque: addr}, Host: addr, Header: http.Header{}}
		if err := req.Write(conn); err != nil {
			conn.Close()
			return nil, err
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), req)
		if err != nil {
			conn.Close()
			return nil, fmt.Errorf("proxy %s: %w", proxyAddr, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			conn.Close()
			return nil, fmt.Errorf("proxy %s refused CONNECT %s: %s", proxyAddr, addr, resp.Status)
		}
		_ = conn.SetDeadline(time.Time{})
		return conn, nil
	}
}

// httpGet requests url with Host host and returns the status and the first 512 bytes.
func httpGet(c *http.Client) canary.Get {
	return func(ctx context.Context, u, host string) (int, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return 0, "", err
		}
		req.Host = host
		req.Header.Set("User-Agent", "shardgate-canary")
		resp, err := c.Do(req)
		if err != nil {
			// A fixed description: a transport error can quote what the endpoint sent (a
			// malformed answer's first bytes), and the address is the tenant's choice.
			d, _ := clusteraccess.Describe(err)
			return 0, "", errors.New(d)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, 512))
		return resp.StatusCode, string(b), err
	}
}
