package clusteraccess

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/version"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/gatewayapi"
	"github.com/shardgate/shardgate/pkg/routekinds"
	"github.com/shardgate/shardgate/pkg/watchcache"
)

// Phase of an engaged user cluster.
type Phase string

// Phases.
const (
	// PhaseConnecting: first contact or the cache's first sync is under way.
	PhaseConnecting Phase = "Connecting"
	// PhaseReachable: the cache is synced and its watches run (or the health probe answered).
	PhaseReachable Phase = "Reachable"
	// PhaseUnreachable: the server does not answer (or not usefully); Reason says how. The
	// cache, if it ever synced, holds the last state it saw.
	PhaseUnreachable Phase = "Unreachable"
	// PhaseBlocked: the cluster cannot be engaged (no kubeconfig, a bad one, control plane not
	// initialized); Reason says why. A running engagement is kept meanwhile.
	PhaseBlocked Phase = "Blocked"
)

// State is what the engager knows about one cluster right now. Message is a fixed description
// (Describe): nothing a user-cluster endpoint sent is ever in it.
type State struct {
	Phase Phase
	// Reason is a v1alpha1 reason constant for PhaseBlocked, or the Failure for PhaseUnreachable.
	Reason  string
	Message string
	Since   time.Time
}

// engaged is one user cluster's engagement: its first contact, cache and health probe.
type engaged struct {
	e           *Engager
	key         types.NamespacedName
	fingerprint [32]byte
	settings    Settings
	cfg         *rest.Config
	// rt is the engagement's one connection pool: first contact, the CRDs, the cache, the writer
	// and the health probe all go through it, so a cluster costs one TLS handshake and one HTTP/2
	// connection, not one per client (handshakes were ~30 % of the controller's CPU while a
	// thousand clusters were engaged, BenchmarkSeedScale). Built by run.
	rt     http.RoundTripper
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// suspect wakes the probe loop when a watch failed, to confirm with one probe.
	suspect chan struct{}

	mu          sync.Mutex
	cache       *watchcache.Cache // nil until the first contact succeeded
	writer      client.Client
	caps        Capabilities
	routes      routekinds.Registry // the route kinds the cluster serves, from the first contact on
	identity    string              // the user Shardgate acts as in the cluster, once known
	state       State
	synced      bool
	overBudget  map[string]string // kind → fixed description, for the kinds over their budget
	pendingFrom time.Time         // first node change not yet published, for the convergence histogram
	listeners   listenerNamespaces
	// undecided counts route inputs seen without Shardgate's decision (countUndecided).
	undecided atomic.Uint64
}

func newEngaged(e *Engager, key types.NamespacedName, fp [32]byte, s Settings, cfg *rest.Config) *engaged {
	ctx, cancel := context.WithCancel(context.Background())
	return &engaged{e: e, key: key, fingerprint: fp, settings: s, cfg: cfg, ctx: ctx, cancel: cancel, suspect: make(chan struct{}, 1),
		state: State{Phase: PhaseConnecting, Reason: string(PhaseConnecting), Message: "contacting the API server", Since: e.opts.Clock.Now()}}
}

func (c *engaged) start() {
	c.wg.Add(1)
	go func() { defer c.wg.Done(); c.run() }()
}

func (c *engaged) stop() {
	c.cancel()
	c.wg.Wait()
	c.mu.Lock()
	ca := c.cache
	c.mu.Unlock()
	if ca != nil {
		ca.Wait()
	}
}

// run makes first contact (retried with backoff until it succeeds or the engagement ends), then
// starts the cache and the health probe.
func (c *engaged) run() {
	o := c.e.opts
	// Uncompressed: the cache's watch streams carry a few events an hour and a gzip reader holds
	// ~43 KB for the life of its stream (see watchcache.New).
	cfg := rest.CopyConfig(c.cfg)
	cfg.DisableCompression = true
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		// Only TLS material the kubeconfig checks let through and Go cannot use gets here.
		c.fail("setting up the connection", err)
		return
	}
	c.rt = rt
	delay := o.ConnectBackoff
	for {
		caps, err := c.discover()
		if err == nil {
			routes := servedRouteKinds(o.RouteKinds, o.Scheme, caps.Unserved)
			c.mu.Lock()
			c.caps, c.routes = caps, routes
			c.mu.Unlock()
			break
		}
		if c.ctx.Err() != nil {
			return
		}
		c.fail("contacting the API server", err)
		select {
		case <-c.ctx.Done():
			return
		case <-o.Clock.After(delay):
		}
		delay = min(2*delay, o.MaxConnectBackoff)
	}
	if err := c.startCache(); err != nil {
		// Only a programming error gets here (the mapper and scheme are static).
		c.e.setPhase(c, PhaseUnreachable, string(FailureServer), "cannot build the cluster's cache: "+err.Error())
		return
	}
	c.wg.Add(1)
	go func() { defer c.wg.Done(); c.probeLoop() }()
	c.mu.Lock()
	forbidden := c.caps.Forbidden
	c.mu.Unlock()
	if len(forbidden) > 0 {
		c.wg.Add(1)
		go func() { defer c.wg.Done(); c.rightsLoop(forbidden) }()
	}
}

// discover asks the server, within ConnectTimeout, for its version and whether it serves the
// admission policy API, installs Shardgate's CRDs and (where the settings allow and the cluster
// has none) Gateway API's, and finds which of the route kinds' cached kinds it serves.
func (c *engaged) discover() (Capabilities, error) {
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(withTimeout(c.cfg, c.e.opts.ConnectTimeout), c.httpClient(c.e.opts.ConnectTimeout))
	if err != nil {
		return Capabilities{}, err
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.e.opts.ConnectTimeout)
	defer cancel()
	var caps Capabilities
	info := &apimachineryversion.Info{}
	// No retries inside an attempt: client-go retries a GET whose connection was closed or reset
	// ten times, which spent the whole ConnectTimeout on a server that accepts and closes, with
	// the cluster Connecting throughout and "timed out" at the end. The first failure is reported
	// as it is (run retries with backoff).
	body, err := dc.RESTClient().Get().MaxRetries(0).AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return caps, err
	}
	if err := json.Unmarshal(body, info); err != nil {
		return caps, errors.New("the /version answer is not JSON")
	}
	if v, err := version.ParseGeneric(info.GitVersion); err == nil {
		caps.Version = fmt.Sprintf("v%d.%d", v.Major(), v.Minor())
		caps.StreamingLists = v.AtLeast(version.MajorMinor(1, 27))
	}
	res := &metav1.APIResourceList{}
	err = dc.RESTClient().Get().MaxRetries(0).AbsPath("/apis/admissionregistration.k8s.io/v1").Do(ctx).Into(res)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return caps, err
	default:
		var names []string
		for _, r := range res.APIResources {
			names = append(names, r.Name)
		}
		caps.AdmissionPolicy = slices.Contains(names, "validatingadmissionpolicies") && slices.Contains(names, "validatingadmissionpolicybindings")
	}
	if caps.CRDs, err = c.installCRDs(); err != nil {
		return caps, err
	}
	disc := newGroupVersions(dc.RESTClient())
	if caps.GatewayAPI, caps.Forbidden, err = c.gatewayAPI(disc); err != nil {
		return caps, err
	}
	// After the installs (which have contexts of their own): what the route kinds' cache may list
	// is what the cluster now serves.
	sctx, scancel := context.WithTimeout(c.ctx, c.e.opts.ConnectTimeout)
	defer scancel()
	var forbidden []forbiddenKind
	caps.Unserved, forbidden, err = unservedKinds(sctx, disc, c.e.opts.Scheme, c.e.opts.RouteKinds, caps.GatewayAPI)
	if err != nil {
		return caps, err
	}
	for _, k := range forbidden {
		caps.Forbidden = append(caps.Forbidden, k.Path)
	}
	if slices.ContainsFunc(forbidden, func(k forbiddenKind) bool { return gatewayapi.RoutesNeed(k.Kind) }) {
		// Shards' Gateways would take routes that nothing allocates and the admission policy (made
		// of the kinds served) guards nowhere: nothing of Gateway API is used, as where the role
		// may not read its CRDs.
		caps.GatewayAPI = gatewayapi.Availability{Reason: v1alpha1.ReasonGatewayAPIForbidden,
			Message: "no Gateway API is used in this cluster" + forbiddenKindsMessage(forbidden)}
		for _, cached := range c.e.opts.RouteKinds.Cached() {
			if gvk := gvkOf(c.e.opts.Scheme, cached.Object); gvk.Group == gatewayapi.Group {
				caps.Unserved[gvk] = true
			}
		}
		return caps, nil
	}
	caps.GatewayAPI.Message += forbiddenKindsMessage(forbidden)
	return caps, nil
}

// rightsLoop asks, every RightsInterval, whether Shardgate may list now what it could not at
// first contact (paths), and re-engages the cluster once it may list any of them: a role that
// still lacks some (ListenerSets, on purpose) must not keep the others unserved. Failures to ask
// (the server unreachable) are the health probe's to tell: it simply asks again.
func (c *engaged) rightsLoop(paths []string) {
	o := c.e.opts
	rc := c.restClient(o.ProbeTimeout)
	if rc == nil {
		return
	}
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-o.Clock.After(o.RightsInterval):
		}
		for _, path := range paths {
			ctx, cancel := context.WithTimeout(c.ctx, o.ProbeTimeout)
			may, err := mayList(ctx, rc, path)
			cancel()
			if may && err == nil {
				c.e.reengage(c)
				return
			}
		}
	}
}

// startCache builds the cache with the informers the controllers read (each handler wired
// before the start), the writer, and starts syncing in the background.
func (c *engaged) startCache() error {
	o := c.e.opts
	c.mu.Lock()
	caps, routes := c.caps, c.routes
	c.mu.Unlock()
	c.listeners.reset()
	// The watches double as the health probe: every request they make (a re-watch after a stream
	// ended, a relist) goes through observed, which wakes the probe loop when it fails at the
	// transport (refused, reset, timed out). client-go retries refused watches by itself without
	// telling the error handler, so this is where a stopped server shows first.
	handler := func(kind client.Object) toolscache.ResourceEventHandler {
		if _, node := kind.(*corev1.Node); node {
			return c.e.nodeHandler(c)
		}
		_, route := o.RouteKinds.KindOf(kind)
		return c.e.changeHandler(c, changeOf(kind, o.RouteKinds), route)
	}
	ca, err := watchcache.New(c.cfg, watchcache.Options{
		HTTPClient:   &http.Client{Transport: observed{rt: c.rt, c: c}},
		Scheme:       o.Scheme,
		Mapper:       c.e.mapper,
		PollInterval: o.DriftInterval,
		// One request per watched kind instead of two: a thousand clusters' first sync is
		// ~12,000 requests fewer to their API servers.
		StreamingLists: caps.StreamingLists,
		// List and watch failures are the server's words: recorded as a fixed description.
		OnError: c.watchError,
		OnSynced: func() {
			c.mu.Lock()
			c.synced = true
			c.mu.Unlock()
			c.reachable("cache synced")
		},
		MaxObjectBytes: o.MaxObjectBytes,
		BudgetRetry:    o.BudgetRetry,
		OnBudget:       c.budget,
	}, cacheKinds(caps, routes, budget{objects: o.MaxObjects, bytes: o.MaxKindBytes}, handler))
	if err != nil {
		return err
	}
	writer, err := client.New(withTimeout(c.cfg, o.WriteTimeout), client.Options{HTTPClient: c.httpClient(o.WriteTimeout), Scheme: o.Scheme, Mapper: c.e.mapper})
	if err != nil {
		return err
	}
	if o.WrapWriter != nil {
		writer = o.WrapWriter(writer)
	}
	c.mu.Lock()
	c.cache, c.writer = ca, writeThrough{Client: writer, cache: ca}
	c.mu.Unlock()
	ca.Start(c.ctx)
	return nil
}

// watchError records a failing list or watch before the first sync. After it, the cache keeps
// the last state, and a failing watch is the health signal: the probe loop is woken to confirm
// with one request (a watch that ends for the server's own reasons — too old a resource
// version, a throttled request — is not a failure of the cluster). A refusal of the credentials
// counts always: decisions must not be made from a cache the cluster no longer lets Shardgate
// refresh.
func (c *engaged) watchError(kind string, err error) {
	if errors.Is(err, context.Canceled) || c.ctx.Err() != nil {
		return
	}
	d, f := Describe(err)
	c.mu.Lock()
	synced := c.synced
	c.mu.Unlock()
	switch {
	case !synced || f == FailureCredentials:
		c.e.setPhase(c, PhaseUnreachable, string(f), fmt.Sprintf("listing %s: %s", kind, d))
	case f == FailureUnreachable:
		c.suspectNow()
	}
}

// observed tells the engagement when a request of its cache failed at the transport.
type observed struct {
	rt http.RoundTripper
	c  *engaged
}

func (o observed) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := o.rt.RoundTrip(req)
	if err != nil && req.Context().Err() == nil {
		o.c.suspectNow()
	}
	return resp, err
}

// suspectNow wakes the probe loop to confirm with one request.
func (c *engaged) suspectNow() {
	select {
	case c.suspect <- struct{}{}:
	default: // a confirmation is already due
	}
}

// fail records a failed request as PhaseUnreachable with a fixed description.
func (c *engaged) fail(what string, err error) {
	d, f := Describe(err)
	c.e.setPhase(c, PhaseUnreachable, string(f), what+": "+d)
}

// probeLoop judges reachability without polling a healthy cluster: while the cluster is
// Reachable it asks nothing (its watches are long-lived requests whose connection HTTP/2 pings
// keep checked; a failing one wakes this loop through observed or watchError) and asks /readyz
// once when woken; while it is not Reachable it asks every ProbeInterval until the server answers. So a
// thousand healthy clusters cost no requests at all, and a dead one only its own.
func (c *engaged) probeLoop() {
	o := c.e.opts
	// One REST client, not a clientset: a clientset builds a client per API group, kept for
	// every engaged cluster.
	probe := c.restClient(o.ProbeTimeout)
	if probe == nil {
		return
	}
	for {
		c.mu.Lock()
		reachable := c.state.Phase == PhaseReachable
		c.mu.Unlock()
		var tick <-chan time.Time
		if !reachable {
			tick = o.Clock.After(o.ProbeInterval)
		}
		select {
		case <-c.ctx.Done():
			return
		case <-c.suspect:
		case <-tick:
		}
		pctx, cancel := context.WithTimeout(c.ctx, o.ProbeTimeout)
		err := probe.Get().AbsPath("/readyz").Do(pctx).Error()
		cancel()
		if c.ctx.Err() != nil {
			return
		}
		c.mu.Lock()
		synced := c.synced
		c.mu.Unlock()
		switch {
		case err != nil:
			c.fail("health probe", err)
		case synced:
			c.reachable("health probe succeeded")
		}
	}
}

// budget records a kind of the cluster going over its object budget (err) or back within it
// (nil). While any kind is over, the cluster is Unreachable with FailureBudget: its cache no
// longer follows the cluster, so the controllers decide nothing from it and change nothing in
// it (records, routers and allocations stay as they are), and the kind is listed again only
// after a back-off (watchcache.Options.BudgetRetry), never in a loop, by this replica or another.
func (c *engaged) budget(kind string, err error) {
	if c.ctx.Err() != nil {
		return
	}
	c.mu.Lock()
	if err != nil {
		if c.overBudget == nil {
			c.overBudget = map[string]string{}
		}
		c.overBudget[kind] = budgetMessage(err)
	} else {
		delete(c.overBudget, kind)
	}
	synced := c.synced
	c.mu.Unlock()
	if err != nil || synced {
		c.reachable("cache back within its budget")
	}
}

// budgetMessage describes a budget error in fixed words (the kind is the cache's own name of it,
// the limit the operator's flag).
func budgetMessage(err error) string {
	var be *watchcache.BudgetError
	if !errors.As(err, &be) {
		return "over its object budget"
	}
	if be.Bytes {
		return fmt.Sprintf("a %s larger than %d bytes (--max-object-bytes): Shardgate stopped reading the cluster "+
			"and changes nothing in it until it is within its budget", be.Kind, be.Limit)
	}
	if be.Stored {
		return fmt.Sprintf("more than %d bytes of %s objects (--max-bytes-per-kind): Shardgate stopped reading the "+
			"cluster and changes nothing in it until it is within its budget", be.Limit, be.Kind)
	}
	return fmt.Sprintf("more than %d %s objects (--max-objects-per-kind): Shardgate stopped reading the cluster "+
		"and changes nothing in it until it is within its budget", be.Limit, be.Kind)
}

// reachable makes the cluster Reachable (msg says how that was found), unless a kind is over its
// budget: then it stays Unreachable with FailureBudget.
func (c *engaged) reachable(msg string) {
	c.mu.Lock()
	over := ""
	for _, k := range slices.Sorted(maps.Keys(c.overBudget)) {
		over = c.overBudget[k]
		break
	}
	c.mu.Unlock()
	if over != "" {
		c.e.setPhase(c, PhaseUnreachable, string(FailureBudget), over)
		return
	}
	c.e.setPhase(c, PhaseReachable, string(PhaseReachable), msg)
}

// setPhase records a state change and notifies subscribers; the same state again is a no-op.
func (e *Engager) setPhase(c *engaged, p Phase, reason, msg string) {
	c.mu.Lock()
	if c.state.Phase == p && c.state.Reason == reason && c.state.Message == msg {
		c.mu.Unlock()
		return
	}
	samePhase := c.state.Phase == p
	since := c.state.Since
	if !samePhase {
		since = e.opts.Clock.Now()
	}
	c.state = State{Phase: p, Reason: reason, Message: msg, Since: since}
	c.mu.Unlock()
	if !samePhase {
		e.opts.Log.Info("cluster phase", "cluster", c.key, "phase", p, "reason", reason, "message", msg)
	}
	e.notify(c.key, changePhase)
}

// restClient is a REST client for raw paths of the cluster, each request within timeout; nil when
// none can be built (only TLS material Go cannot use gets there, which run tells).
func (c *engaged) restClient(timeout time.Duration) rest.Interface {
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(withTimeout(c.cfg, timeout), c.httpClient(timeout))
	if err != nil {
		return nil
	}
	return dc.RESTClient()
}

// httpClient is a client of the engagement's connection pool whose requests end after timeout.
func (c *engaged) httpClient(timeout time.Duration) *http.Client {
	return &http.Client{Transport: c.rt, Timeout: timeout}
}

func withTimeout(cfg *rest.Config, d time.Duration) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Timeout = d
	return c
}
