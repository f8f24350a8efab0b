package watchcache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	restwatch "k8s.io/client-go/rest/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// informer lists and watches one kind into its store.
type informer struct {
	kind         Kind
	gvk          schema.GroupVersionKind
	mapping      *meta.RESTMapping
	rc           rest.Interface
	codecs       serializer.CodecFactory
	scheme       *runtime.Scheme
	param        runtime.ParameterCodec
	watchTimeout time.Duration
	store        toolscache.Indexer
	synced       atomic.Bool
	listedOnce   chan struct{}    // closed at the first list
	started      bool             // an on-demand kind's goroutine runs (Cache.mu)
	lastRV       atomic.Value     // string: the resource version the store is at
	maxBytes     int64            // Options.MaxObjectBytes
	count        int              // objects in the store (the kind's goroutine's)
	sizes        map[string]int64 // stored size by key, where the kind has a byte budget
	bytes        int64            // their sum
	over         atomic.Bool      // over its budget since the last list
}

// Backoff after a failed list or watch: doubling from 800 ms to 30 s, jittered, reset by a
// success (client-go's reflector uses the same bounds).
const (
	backoffMin = 800 * time.Millisecond
	backoffMax = 30 * time.Second
)

// run lists, then watches from the list's resource version, again and again: a watch the server
// ended is resumed where it was; one whose resource version is too old (410) lists again; a
// failure backs off and tries the watch again (or the list, if there was none yet). Where the
// server streams lists (streaming, see Options.StreamingLists), the list and the first watch are
// one request: a watch that starts with the current objects (sendInitialEvents). A kind that
// goes over its budget is listed again after a longer back-off (Options.OnBudget).
func (in *informer) run(ctx context.Context, c *Cache) {
	delay, budgetDelay := time.Duration(0), time.Duration(0)
	sleep := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		}
	}
	wait := func(err error) bool {
		if err != nil {
			c.fail(in.gvk.Kind, err)
		}
		delay = min(max(2*delay, backoffMin), backoffMax)
		return sleep(jitter(delay))
	}
	// overBudget reports err to OnBudget and waits, when it is a BudgetError.
	overBudget := func(err error) (budget, goOn bool) {
		if be := (*BudgetError)(nil); !errors.As(err, &be) {
			return false, true
		}
		c.budget(in, err)
		budgetDelay = nextBudgetDelay(budgetDelay, c.opts.BudgetRetry)
		return true, sleep(jitter(budgetDelay))
	}
	for ctx.Err() == nil {
		var (
			rv     string
			err    error
			stream *watchStream
		)
		if c.streaming.Load() {
			rv, stream, err = in.streamList(ctx)
			if refusesStreaming(err) {
				c.streaming.Store(false) // for every kind of this server: list and watch from now on
				continue
			}
		} else {
			rv, err = in.list(ctx)
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if budget, goOn := overBudget(err); !goOn {
				return
			} else if !budget && !wait(err) {
				return
			}
			continue
		}
		delay, budgetDelay = 0, 0
		c.listed(in)
		for ctx.Err() == nil {
			began := time.Now()
			if stream == nil {
				stream, err = in.openWatch(ctx, metav1.ListOptions{ResourceVersion: rv})
			}
			got := false
			if err == nil {
				rv, got, err = in.follow(ctx, stream, rv)
				stream.Close()
			}
			stream = nil
			if got {
				delay = 0
			}
			if err == nil {
				// The server ended the watch: resume. One that ends at once with nothing in it
				// (a proxy cutting streams) is resumed after a back-off, never in a tight loop.
				if !got && time.Since(began) < time.Second && !wait(nil) {
					return
				}
				continue
			}
			if ctx.Err() != nil {
				return
			}
			if budget, goOn := overBudget(err); !goOn {
				return
			} else if budget {
				break // list again, after the back-off
			}
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				break // too old: list again
			}
			if !wait(err) {
				return
			}
		}
	}
}

// list replaces the store with what the server holds now and tells the handler the difference.
// The answer is read one item at a time (decodeList), so that the kind's budget stops a list
// that would go past it before the rest is read.
func (in *informer) list(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	body, err := in.request(metav1.ListOptions{}).Stream(ctx)
	if err != nil {
		return "", err
	}
	defer func() { _ = body.Close() }()
	b := &boundedReader{r: body, max: in.maxBytes}
	rv, objs, sizes, err := in.decodeList(json.NewDecoder(b), b)
	if err != nil {
		return "", in.overBudget(b, err)
	}
	return rv, in.replace(objs, sizes, rv)
}

// decodeList reads a list answer ({"metadata": {...}, "items": [...]}, keys in any order),
// trimming each item as it comes.
func (in *informer) decodeList(dec *json.Decoder, b *boundedReader) (string, []any, []int64, error) {
	if err := expectDelim(dec, '{'); err != nil {
		return "", nil, nil, err
	}
	var (
		rv    string
		objs  []any
		sizes []int64
	)
	for dec.More() {
		b.reset()
		key, err := dec.Token()
		if err != nil {
			return "", nil, nil, err
		}
		switch key {
		case "metadata":
			var lm metav1.ListMeta
			if err := dec.Decode(&lm); err != nil {
				return "", nil, nil, err
			}
			rv = lm.ResourceVersion
		case "items":
			if objs, sizes, err = in.decodeItems(dec, b); err != nil {
				return "", nil, nil, err
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return "", nil, nil, err
			}
		}
	}
	return rv, objs, sizes, expectDelim(dec, '}')
}

// decodeItems reads a list's items (null or an array), trimmed, with the size each is stored in,
// stopping at the first past the kind's budget.
func (in *informer) decodeItems(dec *json.Decoder, b *boundedReader) ([]any, []int64, error) {
	t, err := dec.Token()
	if err != nil || t == nil {
		return nil, nil, err
	}
	if t != json.Delim('[') {
		return nil, nil, fmt.Errorf("the list's items are a %v, not an array", t)
	}
	var (
		objs  []any
		sizes []int64
		total int64
	)
	for dec.More() {
		if err := in.countOver(len(objs) + 1); err != nil {
			return nil, nil, err
		}
		b.reset()
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, err
		}
		gvk := in.gvk // items carry no kind: it is the list's
		obj, _, err := in.codecs.UniversalDeserializer().Decode(raw, &gvk, nil)
		if err != nil {
			return nil, nil, err
		}
		o, err := in.trim(obj)
		if err != nil {
			return nil, nil, err
		}
		size := storedSize(o, int64(len(raw)))
		if total += size; in.bytesOver(total) != nil {
			return nil, nil, in.bytesOver(total)
		}
		objs, sizes = append(objs, o), append(sizes, size)
	}
	return objs, sizes, expectDelim(dec, ']')
}

func expectDelim(dec *json.Decoder, d json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if t != d {
		return fmt.Errorf("expected %v in the list, got %v", d, t)
	}
	return nil
}

// replace makes objs, listed at rv, the store's content and tells the handler the difference;
// sizes are what each takes (storedSize).
func (in *informer) replace(objs []any, sizes []int64, rv string) error {
	first := !in.synced.Load()
	before := map[string]any{}
	if !first {
		for _, o := range in.store.List() {
			k, _ := toolscache.MetaNamespaceKeyFunc(o)
			before[k] = o
		}
	}
	if err := in.store.Replace(objs, rv); err != nil {
		return err
	}
	in.count = len(objs)
	in.recount(objs, sizes)
	in.lastRV.Store(rv)
	h := in.kind.Handler
	if h == nil {
		return nil
	}
	for _, o := range objs {
		k, _ := toolscache.MetaNamespaceKeyFunc(o)
		old, ok := before[k]
		delete(before, k)
		switch {
		case !ok:
			h.OnAdd(o, first)
		case resourceVersion(old) != resourceVersion(o):
			h.OnUpdate(old, o)
		}
	}
	for k, old := range before {
		h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: k, Obj: old})
	}
	return nil
}

// watchStream is an open watch: its events, and how to end it.
type watchStream struct {
	dec     *restwatch.Decoder
	body    io.Closer
	bounded *boundedReader // reset at each event
	cancel  context.CancelFunc
}

// next decodes the next event, within Options.MaxObjectBytes.
func (s *watchStream) next(in *informer) (watch.EventType, runtime.Object, error) {
	s.bounded.reset()
	typ, obj, err := s.dec.Decode()
	if err != nil {
		err = in.overBudget(s.bounded, err)
	}
	return typ, obj, err
}

// Close ends the stream.
func (s *watchStream) Close() {
	s.cancel()
	_ = s.body.Close()
}

// openWatch starts a watch of the kind with opts (bookmarks on; the server ends it after a random
// time between WatchTimeout and twice that).
func (in *informer) openWatch(ctx context.Context, opts metav1.ListOptions) (*watchStream, error) {
	info, ok := runtime.SerializerInfoForMediaType(in.codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok || info.StreamSerializer == nil {
		return nil, errors.New("no JSON stream decoder")
	}
	timeout := int64((in.watchTimeout + rand.N(in.watchTimeout)) / time.Second)
	opts.Watch, opts.AllowWatchBookmarks, opts.TimeoutSeconds = true, true, &timeout
	ctx, cancel := context.WithCancel(ctx)
	body, err := in.request(opts).Stream(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	b := &boundedReader{r: body, max: in.maxBytes}
	frames := info.StreamSerializer.NewFrameReader(struct {
		io.Reader
		io.Closer
	}{b, body})
	dec := restwatch.NewDecoder(streaming.NewDecoder(frames, info.StreamSerializer.Serializer), in.codecs.UniversalDeserializer())
	return &watchStream{dec: dec, body: body, bounded: b, cancel: cancel}, nil
}

// errInitialEventsUnended: a streaming list whose initial events did not end within the time a
// list may take (a server or proxy that ignores sendInitialEvents would send them forever).
var errInitialEventsUnended = errors.New("the streamed list did not end within a minute")

// streamList opens a watch that begins with every current object (sendInitialEvents, the
// streaming list of KEP-3157, served by Kubernetes 1.32 and 1.34+) and reads it until the
// bookmark that ends the initial events: the store is replaced with them as after a list, and the
// stream, at the bookmark's resource version, is returned to be followed as a watch.
func (in *informer) streamList(ctx context.Context) (string, *watchStream, error) {
	send := true
	s, err := in.openWatch(ctx, metav1.ListOptions{SendInitialEvents: &send, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		return "", nil, err
	}
	timer := time.AfterFunc(time.Minute, s.cancel)
	fail := func(err error) (string, *watchStream, error) {
		if !timer.Stop() {
			err = errInitialEventsUnended
		}
		s.Close()
		return "", nil, err
	}
	var (
		objs  []any
		sizes []int64
		total int64
	)
	for {
		typ, obj, err := s.next(in)
		if err != nil {
			return fail(err)
		}
		switch typ {
		case watch.Added:
			if err := in.countOver(len(objs) + 1); err != nil {
				return fail(err)
			}
			o, err := in.trim(obj)
			if err != nil {
				return fail(err)
			}
			size := storedSize(o, s.bounded.n)
			if total += size; in.bytesOver(total) != nil {
				return fail(in.bytesOver(total))
			}
			objs, sizes = append(objs, o), append(sizes, size)
		case watch.Bookmark:
			m, err := meta.Accessor(obj)
			if err != nil || m.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
				continue
			}
			if !timer.Stop() {
				return fail(errInitialEventsUnended)
			}
			rv := m.GetResourceVersion()
			if err := in.replace(objs, sizes, rv); err != nil {
				s.Close()
				return "", nil, err
			}
			return rv, s, nil
		case watch.Error:
			return fail(apierrors.FromObject(obj))
		default:
			return fail(fmt.Errorf("unexpected %s event before the end of a streamed list", typ))
		}
	}
}

// refusesStreaming says whether err is a server's (or proxy's) refusal of streaming lists:
// Kubernetes 1.33 and servers with the WatchList feature off answer 422 Invalid.
func refusesStreaming(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || errors.Is(err, errInitialEventsUnended)
}

// follow applies the stream's events from rv until it ends; it returns the resource version
// reached, whether any event came, and why it ended (nil: the server ended it).
func (in *informer) follow(ctx context.Context, s *watchStream, rv string) (string, bool, error) {
	got := false
	for {
		typ, obj, err := s.next(in)
		var be *BudgetError
		switch {
		case errors.As(err, &be):
			return rv, got, err
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF) && ctx.Err() == nil:
			return rv, got, nil
		case err != nil:
			return rv, got, err
		}
		got = true
		if typ == watch.Error {
			return rv, got, apierrors.FromObject(obj)
		}
		if next := resourceVersion(obj); next != "" {
			rv = next
		}
		if err := in.apply(typ, obj, s.bounded.n); err != nil {
			return rv, got, err
		}
		in.lastRV.Store(rv)
	}
}

// apply keeps one event (raw bytes long) in the store and tells the handler.
func (in *informer) apply(typ watch.EventType, obj runtime.Object, raw int64) error {
	if typ == watch.Bookmark {
		return nil
	}
	o, err := in.trim(obj)
	if err != nil {
		return err
	}
	k, err := toolscache.MetaNamespaceKeyFunc(o)
	if err != nil {
		return err
	}
	old, exists, _ := in.store.GetByKey(k)
	h := in.kind.Handler
	switch typ {
	case watch.Added, watch.Modified:
		if !exists {
			if err := in.countOver(in.count + 1); err != nil {
				return err
			}
			in.count++
		}
		if err := in.resize(k, storedSize(o, raw)); err != nil {
			if !exists {
				in.count--
			}
			return err
		}
		if err := in.store.Update(o); err != nil {
			return err
		}
		switch {
		case h == nil:
		case exists:
			h.OnUpdate(old, o)
		default:
			h.OnAdd(o, false)
		}
	case watch.Deleted:
		if exists {
			if err := in.store.Delete(old); err != nil {
				return err
			}
			in.count--
			_ = in.resize(k, 0)
		}
		if h != nil {
			h.OnDelete(o)
		}
	default:
		return fmt.Errorf("unexpected watch event %q", typ)
	}
	return nil
}

// request is a list (or, with opts.Watch, a watch) of the kind across all namespaces, with the
// kind's server-side selectors.
func (in *informer) request(opts metav1.ListOptions) *rest.Request {
	if in.kind.Labels != nil {
		opts.LabelSelector = in.kind.Labels.String()
	}
	if in.kind.Fields != nil {
		opts.FieldSelector = in.kind.Fields.String()
	}
	return in.rc.Get().Resource(in.mapping.Resource.Resource).VersionedParams(&opts, in.param)
}

// trim drops managedFields and applies the kind's transform.
func (in *informer) trim(obj runtime.Object) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	if in.kind.Transform == nil {
		return obj, nil
	}
	return in.kind.Transform(obj)
}

func resourceVersion(o any) string {
	if m, err := meta.Accessor(o); err == nil {
		return m.GetResourceVersion()
	}
	return ""
}
