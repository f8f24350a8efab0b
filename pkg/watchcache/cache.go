// Package watchcache is a lean list-and-watch cache for the many user clusters one controller
// engages: per kind, one goroutine lists, watches, decodes each event inline, keeps the store and
// calls the kind's handler. Where the server streams lists (Options.StreamingLists), the list and
// the first watch are one request. client-go's shared informer costs about twelve goroutines per watch
// (reflector, stream decoder, FIFO, processor, one pair per listener, resync, controller-runtime's
// stop plumbing) and a ring buffer per listener; at a thousand clusters of twenty watches that is
// a quarter of a million goroutines (BenchmarkSeedScale). Here a watch costs its own goroutine
// and the HTTP/2 stream's.
//
// A kind whose changes need no prompt answer can be polled instead (Kind.Polled): listed every
// Options.PollInterval by one goroutine shared by all polled kinds of the cache, no stream held;
// the caller tells the cache of its own writes of such kinds (Remember, Forget) so that reads see
// them at once.
//
// It serves reads (client.Reader: Get, and List by namespace and label selector) from what it
// holds, never from the network. Streams are not compressed (see New). What it does not do: field
// selectors on reads (the server-side ones in Kind are fine), resyncs (handlers see changes, not
// periods), pagination.
package watchcache

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Kind is one kind the cache lists and watches.
type Kind struct {
	// Object is an empty object of the kind, e.g. &corev1.Node{}.
	Object client.Object
	// Labels and Fields select, on the server, which objects are listed and watched (nil: all).
	Labels labels.Selector
	Fields fields.Selector
	// Transform trims each object before it is stored (managedFields are always dropped).
	Transform toolscache.TransformFunc
	// Handler is told of every change, from the cache's goroutine for the kind: it must not
	// block (enqueue and return).
	Handler toolscache.ResourceEventHandler
	// Polled: listed every Options.PollInterval instead of watched; the handler is told what
	// changed between two lists. For kinds whose change only needs repairing in a while (objects
	// only the caller writes), at no goroutine or stream of their own.
	Polled bool
	// OnDemand: watched from the first read of the kind on, not from Start; that read waits for
	// the kind's first list (up to onDemandWait). For kinds that only some clusters' decisions
	// read, so the others hold no stream for them (and hear none of their changes). Synced and
	// OnSynced do not wait for it.
	OnDemand bool
	// MaxObjects is the kind's budget (0: none): a list or watch that would hold more stops at
	// the first object past it (see BudgetError and Options.OnBudget).
	MaxObjects int
	// MaxBytes is the kind's budget of stored bytes (0: none), each object counted at its
	// protobuf size once trimmed (the bytes it was read from, for types without one).
	MaxBytes int64
}

// Options configure a Cache.
type Options struct {
	Scheme *runtime.Scheme
	Mapper meta.RESTMapper
	// HTTPClient, if set, carries the cache's requests instead of a client of its own built from
	// the config (to share one connection with the caller's other clients). Its transport should
	// not ask for compression (see New).
	HTTPClient *http.Client
	// OnError is told of every failed list or watch, with the kind's name. The cache retries
	// by itself (backing off up to 30 s).
	OnError func(kind string, err error)
	// OnSynced is called once, when every kind has been listed.
	OnSynced func()
	// WatchTimeout: each watch asks the server to end it after a random time between this and
	// twice this (default 5 min), then watches again from where it was.
	WatchTimeout time.Duration
	// StreamingLists: list the watched kinds with streaming lists (a watch that begins with the
	// current objects, KEP-3157), one request per kind instead of a list and a watch. Set it only
	// for servers that know the parameter (Kubernetes 1.27+: older ones would ignore it); a server
	// that refuses (1.33, or the WatchList feature off) is listed and watched from then on.
	StreamingLists bool
	// PollInterval: polled kinds are listed again after a random time within 10 % of this
	// (default 2 min); a failed list is retried backing off as a failed watch is.
	PollInterval time.Duration
	// MaxObjectBytes bounds what one object (one list item or watch event) may take to decode
	// (0: no bound); a larger one puts its kind over budget.
	MaxObjectBytes int64
	// OnBudget is told when a kind goes over its budget (err, a *BudgetError) and when a later
	// list finds it within again (nil). Over budget, the kind's store keeps what it held before,
	// and the kind is listed again after BudgetRetry, doubling up to 16 times that.
	OnBudget func(kind string, err error)
	// BudgetRetry: see OnBudget (default 1 min).
	BudgetRetry time.Duration
}

// Cache holds the objects of its kinds.
type Cache struct {
	opts    Options
	kinds   map[schema.GroupVersionKind]*informer
	pending atomic.Int32 // kinds not listed yet (on-demand ones excepted)
	// streaming: the server is asked for streaming lists (Options.StreamingLists, until it refuses).
	streaming atomic.Bool
	once      sync.Once
	running   sync.WaitGroup
	// ctx is Start's, for the on-demand kinds started later; ended says it is done (no kind
	// starts after that: running's count may be zero and Wait under way).
	mu    sync.Mutex
	ctx   context.Context
	ended bool
}

// New builds a cache of kinds served by the API server of cfg. Nothing is requested before Start.
// Every request goes through cfg's transport (its wrappers included), or Options.HTTPClient, as JSON.
func New(cfg *rest.Config, opts Options, kinds []Kind) (*Cache, error) {
	if opts.WatchTimeout == 0 {
		opts.WatchTimeout = 5 * time.Minute
	}
	if opts.PollInterval == 0 {
		opts.PollInterval = 2 * time.Minute
	}
	if opts.BudgetRetry == 0 {
		opts.BudgetRetry = time.Minute
	}
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType, cfg.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	// An API server gzips watch streams for clients that accept it, and each gzip reader holds
	// ~43 KB for the life of its stream: twenty watches, most of a megabyte per cluster, to save
	// bytes on streams that carry a few events an hour.
	cfg.DisableCompression = true
	httpClient := opts.HTTPClient
	if httpClient == nil {
		var err error
		if httpClient, err = rest.HTTPClientFor(cfg); err != nil {
			return nil, err
		}
	}
	codecs := codecsFor(opts.Scheme)
	c := &Cache{opts: opts, kinds: map[schema.GroupVersionKind]*informer{}}
	for _, k := range kinds {
		in, err := newInformer(cfg, httpClient, codecs, opts, k)
		if err != nil {
			return nil, err
		}
		c.kinds[in.gvk] = in
	}
	for _, in := range c.kinds {
		if !in.kind.OnDemand {
			c.pending.Add(1)
		}
	}
	c.streaming.Store(opts.StreamingLists)
	return c, nil
}

// codecs are built once per scheme: every engaged cluster's cache uses the same.
var codecCache sync.Map // *runtime.Scheme → serializer.CodecFactory

func codecsFor(s *runtime.Scheme) serializer.CodecFactory {
	if c, ok := codecCache.Load(s); ok {
		return c.(serializer.CodecFactory)
	}
	c, _ := codecCache.LoadOrStore(s, serializer.NewCodecFactory(s))
	return c.(serializer.CodecFactory)
}

func newInformer(cfg *rest.Config, httpClient *http.Client, codecs serializer.CodecFactory, opts Options, k Kind) (*informer, error) {
	gvk, err := apiutil.GVKForObject(k.Object, opts.Scheme)
	if err != nil {
		return nil, err
	}
	mapping, err := opts.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", gvk.Kind, err)
	}
	rc, err := apiutil.RESTClientForGVK(gvk, true, false, cfg, codecs, httpClient)
	if err != nil {
		return nil, err
	}
	return &informer{kind: k, gvk: gvk, mapping: mapping, rc: rc, codecs: codecs, scheme: opts.Scheme,
		param: runtime.NewParameterCodec(opts.Scheme), watchTimeout: opts.WatchTimeout, listedOnce: make(chan struct{}),
		maxBytes: opts.MaxObjectBytes,
		store:    toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})}, nil
}

// Start lists and watches every watched kind until ctx ends, one goroutine each, and polls the
// polled kinds from one more; on-demand kinds start at their first read. It returns at once.
func (c *Cache) Start(ctx context.Context) {
	c.mu.Lock()
	c.ctx = ctx
	c.mu.Unlock()
	// Counted while ctx lasts, so that an on-demand kind starting meanwhile never adds to a
	// WaitGroup whose Wait may have begun.
	c.running.Add(1)
	context.AfterFunc(ctx, func() {
		c.mu.Lock()
		c.ended = true
		c.mu.Unlock()
		c.running.Done()
	})
	var polled []*informer
	for _, in := range c.kinds {
		switch {
		case in.kind.OnDemand:
		case in.kind.Polled:
			polled = append(polled, in)
		default:
			c.running.Go(func() { in.run(ctx, c) })
		}
	}
	if len(polled) > 0 {
		c.running.Go(func() { c.poll(ctx, polled) })
	}
}

// onDemandWait bounds how long a read waits for an on-demand kind's first list: a server that
// does not answer fails the read (the caller tries again later) instead of holding its worker.
const onDemandWait = 10 * time.Second

// ready starts an on-demand kind at its first read and waits for its first list.
func (c *Cache) ready(ctx context.Context, in *informer) error {
	if !in.kind.OnDemand || in.synced.Load() {
		return nil
	}
	c.mu.Lock()
	switch {
	case c.ctx == nil || c.ended:
		c.mu.Unlock()
		return fmt.Errorf("the cache is not running: %s not listed", in.gvk.Kind)
	case !in.started:
		in.started = true
		cctx := c.ctx
		c.running.Go(func() { in.run(cctx, c) })
	}
	c.mu.Unlock()
	t := time.NewTimer(onDemandWait)
	defer t.Stop()
	select {
	case <-in.listedOnce:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return fmt.Errorf("%s not listed yet", in.gvk.Kind)
	}
}

// Wait returns once every kind's goroutine has ended (after Start's ctx ended).
func (c *Cache) Wait() { c.running.Wait() }

func (c *Cache) fail(kind string, err error) {
	if c.opts.OnError != nil {
		c.opts.OnError(kind, err)
	}
}

// listed is called by each kind after each successful list (within its budget).
func (c *Cache) listed(in *informer) {
	c.budget(in, nil)
	if !in.synced.CompareAndSwap(false, true) {
		return
	}
	close(in.listedOnce)
	if !in.kind.OnDemand && c.pending.Add(-1) == 0 {
		c.once.Do(func() {
			if c.opts.OnSynced != nil {
				c.opts.OnSynced()
			}
		})
	}
}

// Synced reports whether every kind has been listed.
func (c *Cache) Synced() bool { return c.pending.Load() == 0 }
