package clusteraccess

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/pkg/routekinds"
)

// Options tune the engager. Zero values take the defaults.
type Options struct {
	// ProbeInterval between health probes of each user cluster (default 2 s).
	ProbeInterval time.Duration
	// ProbeTimeout of one probe (default 3 s).
	ProbeTimeout time.Duration
	// ConnectTimeout bounds the first contact of an engagement (version and API discovery,
	// default 10 s); a failed contact is retried with backoff from ConnectBackoff (default 1 s)
	// doubling up to MaxConnectBackoff (default 2 min).
	ConnectTimeout, ConnectBackoff, MaxConnectBackoff time.Duration
	// RightsInterval: a cluster whose role lacks rights to some of the kinds it serves (a role
	// of an earlier release) is asked this often whether it has them now (default 30 s), and
	// re-engaged when it has: the operator who applies the role GatewayAPIAvailable asks for sees
	// the kinds served without anything else to do.
	RightsInterval time.Duration
	// WriteTimeout bounds every request of a cluster's writer (default 30 s), so that a server
	// that accepts a request and never answers cannot hold a reconcile.
	WriteTimeout time.Duration
	// DriftInterval: the managed kinds no decision reads (RepairOnly) are not watched but listed
	// this often (default 3 min, within 10 %); a change found is drift, repaired then.
	DriftInterval time.Duration
	// MaxObjects is the per-cluster budget of objects of each kind the cache holds (default
	// DefaultMaxObjects), MaxKindBytes that of the bytes they take once trimmed (default
	// DefaultMaxKindBytes); EndpointSlices get five times both. MaxObjectBytes bounds one object
	// (default DefaultMaxObjectBytes). A cluster over them is Unreachable (FailureBudget) and
	// listed again after BudgetRetry (default 1 min), doubling up to 16 times that.
	MaxObjects     int
	MaxObjectBytes int64
	MaxKindBytes   int64
	BudgetRetry    time.Duration
	// Kubeconfig is what the operator allows in kubeconfigs.
	Kubeconfig KubeconfigPolicy
	// RouteKinds are the kinds of route every cluster's cache holds and the controllers allocate
	// (required). Their types are added to Scheme.
	RouteKinds routekinds.Registry
	// Scheme for the user-cluster caches (default: UserClusterScheme()).
	Scheme *runtime.Scheme
	// Clock for state times (default: the real clock).
	Clock clock.WithTicker
	// Log for engagement events. Nothing a user cluster answered is ever logged (see Describe).
	Log logr.Logger
	// WrapWriter, when set, wraps every cluster's writer (with --sharding: each write checks the
	// fence of the reconcile it is made in).
	WrapWriter func(client.Client) client.Client
}

// Default budgets of a user cluster's cache: ten thousand objects of each kind taking no more
// than 64 MiB once trimmed (a trimmed Ingress takes well under 1 KiB), and no object larger than
// 4 MiB (a real API server refuses requests over 3 MiB and etcd values over 1.5 MiB, so only a
// hostile server sends one).
const (
	DefaultMaxObjects     = 10000
	DefaultMaxObjectBytes = 4 << 20
	DefaultMaxKindBytes   = 64 << 20
)

// Engager keeps one long-lived, small cache per engaged user cluster, probes its health, and
// tells subscribed controllers (by ClusterIngress key) when something they decide from changed.
// Engage never waits on the network: a slow or dead cluster only affects its own goroutines.
type Engager struct {
	opts   Options
	mapper meta.RESTMapper

	mu       sync.Mutex
	clusters map[types.NamespacedName]*engaged
	blocked  map[types.NamespacedName]State
	subs     []subscriber
}

// NewEngager returns an engager; nothing runs until Engage.
func NewEngager(opts Options) (*Engager, error) {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&opts.ProbeInterval, 2*time.Second)
	def(&opts.ProbeTimeout, 3*time.Second)
	def(&opts.ConnectTimeout, 10*time.Second)
	def(&opts.ConnectBackoff, time.Second)
	def(&opts.MaxConnectBackoff, 2*time.Minute)
	def(&opts.WriteTimeout, 30*time.Second)
	def(&opts.RightsInterval, 30*time.Second)
	def(&opts.DriftInterval, 3*time.Minute)
	def(&opts.BudgetRetry, time.Minute)
	if opts.MaxObjects == 0 {
		opts.MaxObjects = DefaultMaxObjects
	}
	if opts.MaxObjectBytes == 0 {
		opts.MaxObjectBytes = DefaultMaxObjectBytes
	}
	if opts.MaxKindBytes == 0 {
		opts.MaxKindBytes = DefaultMaxKindBytes
	}
	if len(opts.RouteKinds) == 0 {
		return nil, errors.New("no route kinds: nothing to allocate")
	}
	if opts.Scheme == nil {
		opts.Scheme = UserClusterScheme()
	}
	if err := opts.RouteKinds.AddToScheme(opts.Scheme); err != nil {
		return nil, err
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	mapper, err := staticRESTMapper(opts.Scheme, opts.RouteKinds)
	if err != nil {
		return nil, err
	}
	return &Engager{opts: opts, mapper: mapper, clusters: map[types.NamespacedName]*engaged{}, blocked: map[types.NamespacedName]State{}}, nil
}

// Engage makes sure key's user cluster is engaged with this kubeconfig and these settings. It
// returns at once: the first contact, the cache start and its sync all happen in the background,
// and their failures show in State. A changed kubeconfig (rotation) or changed settings replace the
// engagement; the same again is a no-op. An unusable kubeconfig is an error wrapping
// ErrKubeconfigInvalid, and any running engagement is left as it is.
func (e *Engager) Engage(key types.NamespacedName, kubeconfig []byte, s Settings) error {
	fp := fingerprint(kubeconfig)
	e.mu.Lock()
	old := e.clusters[key]
	e.mu.Unlock()
	if old != nil && old.fingerprint == fp && old.settings == s {
		e.unblock(key)
		return nil
	}
	cfg, err := RESTConfig(kubeconfig, e.opts.Kubeconfig)
	if err != nil {
		return err
	}
	c := newEngaged(e, key, fp, s, cfg)
	e.mu.Lock()
	// What runs now is stopped, not what ran when this call began: a re-engagement (rightsLoop)
	// may have replaced it while the kubeconfig was read, and would otherwise run on, unreachable.
	replaced := e.clusters[key]
	e.clusters[key] = c
	e.mu.Unlock()
	e.unblock(key)
	c.start()
	switch {
	case old == nil:
		e.opts.Log.Info("engaging", "cluster", key)
	case old.fingerprint != fp:
		e.opts.Log.Info("kubeconfig changed, re-engaging", "cluster", key)
	default:
		// A setting found at first contact changed (Gateway API turned on or off): the new
		// engagement finds it out and caches what it allows, the old one's cache goes with it.
		e.opts.Log.Info("settings changed, re-engaging", "cluster", key, "gatewayAPI", s.GatewayAPI)
	}
	if replaced != nil {
		go replaced.stop() // never wait on the old engagement's goroutines here
	}
	engagedClusters.Set(float64(e.count()))
	e.notify(key, changePhase)
	return nil
}

// reengage replaces c by a new engagement of the same kubeconfig and settings (its rights
// changed: the new first contact finds what it may cache now), unless c was replaced or
// disengaged meanwhile. Called from c's own goroutines, so c is stopped in the background.
func (e *Engager) reengage(c *engaged) {
	e.mu.Lock()
	if e.clusters[c.key] != c {
		e.mu.Unlock()
		return
	}
	n := newEngaged(e, c.key, c.fingerprint, c.settings, c.cfg)
	e.clusters[c.key] = n
	e.mu.Unlock()
	n.start()
	e.opts.Log.Info("rights changed, re-engaging", "cluster", c.key)
	go c.stop()
	e.notify(c.key, changePhase)
}

// Block records why key cannot be engaged (reason is a v1alpha1 reason constant) and notifies
// subscribers when that is news. A running engagement is not stopped: its cache still serves the
// last state, and Shardgate never drops records because it cannot see.
func (e *Engager) Block(key types.NamespacedName, reason, message string) {
	e.mu.Lock()
	old, had := e.blocked[key]
	if had && old.Reason == reason && old.Message == message {
		e.mu.Unlock()
		return
	}
	e.blocked[key] = State{Phase: PhaseBlocked, Reason: reason, Message: message, Since: e.opts.Clock.Now()}
	e.mu.Unlock()
	e.notify(key, changePhase)
}

// unblock clears a recorded Block.
func (e *Engager) unblock(key types.NamespacedName) {
	e.mu.Lock()
	_, had := e.blocked[key]
	delete(e.blocked, key)
	e.mu.Unlock()
	if had {
		e.notify(key, changePhase)
	}
}

// Blocked returns the recorded reason key cannot be engaged, if any.
func (e *Engager) Blocked(key types.NamespacedName) (State, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.blocked[key]
	return s, ok
}

// Disengage stops key's cache and probe. Safe when not engaged.
func (e *Engager) Disengage(key types.NamespacedName) {
	e.mu.Lock()
	c := e.clusters[key]
	delete(e.clusters, key)
	delete(e.blocked, key)
	e.mu.Unlock()
	if c != nil {
		c.stop()
		e.opts.Log.Info("disengaged", "cluster", key)
	}
	engagedClusters.Set(float64(e.count()))
}

// Stop disengages every cluster.
func (e *Engager) Stop() {
	e.mu.Lock()
	keys := make([]types.NamespacedName, 0, len(e.clusters))
	for k := range e.clusters {
		keys = append(keys, k)
	}
	e.mu.Unlock()
	for _, k := range keys {
		e.Disengage(k)
	}
}

// Start implements manager.Runnable: it disengages every cluster when the manager stops.
func (e *Engager) Start(ctx context.Context) error {
	<-ctx.Done()
	e.Stop()
	return nil
}

func (e *Engager) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.clusters)
}

// Get returns key's engaged cluster.
func (e *Engager) Get(key types.NamespacedName) (Cluster, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.clusters[key]
	if !ok {
		return nil, false
	}
	return engagedView{c}, true
}
