package usercluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// Phase of an engaged user cluster.
type Phase string

// Phases.
const (
	// PhaseConnecting: the cache is starting and has not synced yet.
	PhaseConnecting Phase = "Connecting"
	// PhaseReachable: the cache is synced and the API server answers its health probe.
	PhaseReachable Phase = "Reachable"
	// PhaseUnreachable: the health probe fails; the cache holds the last state it saw.
	PhaseUnreachable Phase = "Unreachable"
)

// PhaseBlocked: the cluster cannot be engaged (no kubeconfig, a bad one, control plane not
// initialized); Reason says why. A running engagement is kept meanwhile.
const PhaseBlocked Phase = "Blocked"

// State is what the engager knows about one cluster right now.
type State struct {
	Phase Phase
	// Reason is a v1alpha1 reason constant for PhaseBlocked.
	Reason  string
	Message string
	Since   time.Time
}

// Options tune the engager. Zero values take the defaults.
type Options struct {
	// ProbeInterval between health probes of each user cluster (default 2 s).
	ProbeInterval time.Duration
	// ProbeTimeout of one probe (default 3 s).
	ProbeTimeout time.Duration
	// Scheme for the user-cluster caches (default: client-go's).
	Scheme *runtime.Scheme
	// Log for engagement events.
	Log logr.Logger
}

// Engager keeps one long-lived, small cache per engaged user cluster, probes its health, and
// tells subscribed controllers (by ClusterIngress key) when something they decide from changed.
// A slow or dead cluster only affects its own cache and probe goroutines.
type Engager struct {
	opts Options

	mu       sync.Mutex
	clusters map[types.NamespacedName]*engaged
	blocked  map[types.NamespacedName]State
	subs     []subscriber
}

// Change says what changed in a user cluster, so that each controller is woken only by what it
// decides from: a burst of Ingress writes must not re-run the DNS and shard controllers.
type Change uint8

const (
	// ChangeNodes is a node added, removed, or changed in what DNS reads from it.
	ChangeNodes Change = 1 << iota
	// ChangeManaged is any change to an object Shardgate manages (router pods included).
	ChangeManaged
	// ChangeRoutes is any change to an Ingress or a Namespace.
	ChangeRoutes
	// changePhase is an engagement, sync, reachability or block change: every subscriber hears it.
	changePhase
)

type subscriber struct {
	interest Change
	ch       chan event.GenericEvent
}

// engaged is one user cluster's cache and health.
type engaged struct {
	key         types.NamespacedName
	fingerprint [32]byte
	cache       cache.Cache
	writer      client.Client
	cancel      context.CancelFunc
	done        chan struct{}

	mu          sync.Mutex
	identity    string // the user Shardgate acts as in the cluster, once known
	state       State
	synced      bool
	pendingFrom time.Time // first node change not yet published, for the convergence histogram
}

// NewEngager returns an engager; nothing runs until Engage.
func NewEngager(opts Options) *Engager {
	if opts.ProbeInterval == 0 {
		opts.ProbeInterval = 2 * time.Second
	}
	if opts.ProbeTimeout == 0 {
		opts.ProbeTimeout = 3 * time.Second
	}
	if opts.Scheme == nil {
		opts.Scheme = clientgoscheme.Scheme
	}
	return &Engager{opts: opts, clusters: map[types.NamespacedName]*engaged{}, blocked: map[types.NamespacedName]State{}}
}

// Subscribe returns a channel of GenericEvents naming the ClusterIngress whose user cluster
// changed in one of the interesting ways, or was engaged, synced, blocked or changed
// reachability (always). Use with source.Channel.
func (e *Engager) Subscribe(interest Change) <-chan event.GenericEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	ch := make(chan event.GenericEvent, 4096)
	e.subs = append(e.subs, subscriber{interest: interest | changePhase, ch: ch})
	return ch
}

func (e *Engager) notify(key types.NamespacedName, what Change) {
	e.mu.Lock()
	subs := e.subs
	e.mu.Unlock()
	obj := &metaOnly{}
	obj.SetNamespace(key.Namespace)
	obj.SetName(key.Name)
	for _, s := range subs {
		if s.interest&what != 0 {
			s.ch <- event.GenericEvent{Object: obj}
		}
	}
}

// Engage makes sure key's user cluster is engaged with this kubeconfig. It returns at once: the
// cache starts and syncs in the background. A changed kubeconfig (rotation) replaces the cache;
// the same kubeconfig again is a no-op. An unusable kubeconfig is an error wrapping
// ErrKubeconfigInvalid, and any running engagement is left as it is.
func (e *Engager) Engage(key types.NamespacedName, kubeconfig []byte) error {
	fp := fingerprint(kubeconfig)
	e.mu.Lock()
	old := e.clusters[key]
	e.mu.Unlock()
	if old != nil && old.fingerprint == fp {
		e.unblock(key)
		return nil
	}
	cfg, err := RESTConfig(kubeconfig)
	if err != nil {
		return err
	}
	e.unblock(key)
	c, err := e.start(key, fp, cfg)
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.clusters[key] = c
	e.mu.Unlock()
	if old != nil {
		e.opts.Log.Info("kubeconfig changed, re-engaging", "cluster", key)
		old.stop()
	} else {
		e.opts.Log.Info("engaged", "cluster", key)
	}
	engagedClusters.Set(float64(e.count()))
	return nil
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
	e.blocked[key] = State{Phase: PhaseBlocked, Reason: reason, Message: message, Since: time.Now()}
	e.mu.Unlock()
	e.notify(key, changePhase)
}

// Unblock clears a recorded Block.
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

func (e *Engager) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.clusters)
}

// Cluster is a read-only view of an engaged cluster.
type Cluster struct{ c *engaged }

// Get returns key's engaged cluster.
func (e *Engager) Get(key types.NamespacedName) (Cluster, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.clusters[key]
	return Cluster{c}, ok
}

// State of the cluster now.
func (c Cluster) State() State {
	c.c.mu.Lock()
	defer c.c.mu.Unlock()
	return c.c.state
}

// Synced reports whether the cache has completed its first list, so reads are complete.
func (c Cluster) Synced() bool {
	c.c.mu.Lock()
	defer c.c.mu.Unlock()
	return c.c.synced
}

// Observable reports whether decisions may be made from this cluster's cache now: synced, and
// the API server answers. Controllers change nothing in a cluster they cannot observe.
func (c Cluster) Observable() bool {
	return c.Synced() && c.State().Phase == PhaseReachable
}

// ErrNotSynced is returned by reads before the cache has synced.
var ErrNotSynced = errors.New("user cluster cache not synced yet")

// Nodes lists the cached (trimmed) nodes. It never blocks on the network.
func (c Cluster) Nodes(ctx context.Context) ([]corev1.Node, error) {
	if !c.Synced() {
		return nil, ErrNotSynced
	}
	list := &corev1.NodeList{}
	if err := c.c.cache.List(ctx, list); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// Reader reads the cluster's cached Nodes and Shardgate-managed objects. Reads of other kinds
// fail. Check Synced first: before the first sync a read is incomplete.
func (c Cluster) Reader() client.Reader { return c.c.cache }

// Writer writes to the cluster's API server directly (server-side apply, deletes).
func (c Cluster) Writer() client.Client { return c.c.writer }

// Identity is the user name Shardgate's credentials have in the cluster (from a
// SelfSubjectReview), asked once per engagement.
func (c Cluster) Identity(ctx context.Context) (string, error) {
	c.c.mu.Lock()
	id := c.c.identity
	c.c.mu.Unlock()
	if id != "" {
		return id, nil
	}
	r := &authenticationv1.SelfSubjectReview{}
	if err := c.c.writer.Create(ctx, r); err != nil {
		return "", fmt.Errorf("who am I (SelfSubjectReview): %w", err)
	}
	c.c.mu.Lock()
	c.c.identity = r.Status.UserInfo.Username
	c.c.mu.Unlock()
	return r.Status.UserInfo.Username, nil
}

// TakePendingChange returns when the oldest node change not yet published was observed, and
// clears it. Zero when there is none.
func (c Cluster) TakePendingChange() time.Time {
	c.c.mu.Lock()
	defer c.c.mu.Unlock()
	t := c.c.pendingFrom
	c.c.pendingFrom = time.Time{}
	return t
}

func (e *Engager) start(key types.NamespacedName, fp [32]byte, cfg *rest.Config) (*engaged, error) {
	ca, err := cache.New(cfg, cache.Options{
		Scheme:           e.opts.Scheme,
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject:         cacheByObject(),
		// Reads only from informers created here; a read of anything else fails instead of
		// starting an unplanned watch.
		ReaderFailOnMissingInformer: true,
	})
	if err != nil {
		return nil, fmt.Errorf("cache for %s: %w", key, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &engaged{key: key, fingerprint: fp, cache: ca, cancel: cancel, done: make(chan struct{}),
		state: State{Phase: PhaseConnecting, Message: "starting the cache", Since: time.Now()}}
	inf, err := ca.GetInformer(ctx, &corev1.Node{}, cache.BlockUntilSynced(false))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("node informer for %s: %w", key, err)
	}
	if _, err := inf.AddEventHandler(e.nodeHandler(c)); err != nil {
		cancel()
		return nil, err
	}
	for what, kinds := range map[Change][]client.Object{ChangeManaged: ManagedKinds(), ChangeRoutes: RouteKinds()} {
		for _, kind := range kinds {
			inf, err := ca.GetInformer(ctx, kind, cache.BlockUntilSynced(false))
			if err != nil {
				cancel()
				return nil, fmt.Errorf("informer for %T in %s: %w", kind, key, err)
			}
			if _, err := inf.AddEventHandler(e.changeHandler(c, what)); err != nil {
				cancel()
				return nil, err
			}
		}
	}
	if c.writer, err = client.New(cfg, client.Options{Scheme: e.opts.Scheme}); err != nil {
		cancel()
		return nil, err
	}
	probe, err := kubernetes.NewForConfig(withTimeout(cfg, e.opts.ProbeTimeout))
	if err != nil {
		cancel()
		return nil, err
	}
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); _ = ca.Start(ctx) }()
	go func() {
		defer wg.Done()
		if ca.WaitForCacheSync(ctx) {
			c.mu.Lock()
			c.synced = true
			c.mu.Unlock()
			e.setPhase(c, PhaseReachable, "cache synced")
		}
	}()
	go func() { defer wg.Done(); e.probeLoop(ctx, c, probe) }()
	go func() { wg.Wait(); close(c.done) }()
	return c, nil
}

func (c *engaged) stop() {
	c.cancel()
	<-c.done
}

// probeLoop asks the API server's /readyz every ProbeInterval and records reachability.
func (e *Engager) probeLoop(ctx context.Context, c *engaged, cs kubernetes.Interface) {
	t := time.NewTicker(e.opts.ProbeInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, e.opts.ProbeTimeout)
		err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").Do(pctx).Error()
		cancel()
		if ctx.Err() != nil {
			return
		}
		c.mu.Lock()
		synced := c.synced
		c.mu.Unlock()
		switch {
		case err != nil:
			e.setPhase(c, PhaseUnreachable, "health probe failed: "+err.Error())
		case synced:
			e.setPhase(c, PhaseReachable, "health probe succeeded")
		}
	}
}

// setPhase records a phase change and notifies subscribers; the same phase again is a no-op.
func (e *Engager) setPhase(c *engaged, p Phase, msg string) {
	c.mu.Lock()
	if c.state.Phase == p {
		c.mu.Unlock()
		return
	}
	c.state = State{Phase: p, Message: msg, Since: time.Now()}
	c.mu.Unlock()
	e.opts.Log.Info("cluster phase", "cluster", c.key, "phase", p, "message", msg)
	e.notify(c.key, changePhase)
}

func (e *Engager) nodeHandler(c *engaged) toolscache.ResourceEventHandler {
	changed := func() { e.changed(c, ChangeNodes) }
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { changed() },
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Node)
			n, ok2 := newObj.(*corev1.Node)
			if !ok1 || !ok2 || nodeChanged(o, n) {
				changed()
			}
		},
		DeleteFunc: func(any) { changed() },
	}
}

// changed notifies subscribers once the cache is synced (before that, the sync itself does).
// A node change also starts the convergence clock.
func (e *Engager) changed(c *engaged, what Change) {
	c.mu.Lock()
	if what == ChangeNodes && c.pendingFrom.IsZero() {
		c.pendingFrom = time.Now()
	}
	synced := c.synced
	c.mu.Unlock()
	if synced {
		e.notify(c.key, what)
	}
}

// changeHandler notifies subscribers of any change to an object of its kind once synced, except
// route updates that touch only status: allocation decides from spec, labels and annotations,
// and Shardgate's own address writes (and the routers') must not start another pass over every
// Ingress of the cluster.
func (e *Engager) changeHandler(c *engaged, what Change) toolscache.ResourceEventHandler {
	changed := func() { e.changed(c, what) }
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { changed() },
		UpdateFunc: func(oldObj, newObj any) {
			if what == ChangeRoutes && statusOnly(oldObj, newObj) {
				return
			}
			changed()
		},
		DeleteFunc: func(any) { changed() },
	}
}

// statusOnly reports whether an update left generation, labels, annotations and deletion alone.
func statusOnly(oldObj, newObj any) bool {
	o, ok1 := oldObj.(client.Object)
	n, ok2 := newObj.(client.Object)
	if !ok1 || !ok2 {
		return false
	}
	return o.GetGeneration() == n.GetGeneration() && n.GetGeneration() != 0 &&
		maps.Equal(o.GetLabels(), n.GetLabels()) && maps.Equal(o.GetAnnotations(), n.GetAnnotations()) &&
		o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp())
}

func withTimeout(cfg *rest.Config, d time.Duration) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Timeout = d
	return c
}
