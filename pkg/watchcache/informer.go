package watchcache

import (
	"context"
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
	lastRV       atomic.Value // string: the resource version the store is at
}

// Backoff after a failed list or watch: doubling from 800 ms to 30 s, jittered, reset by a
// success (client-go's reflector uses the same bounds).
const (
	backoffMin = 800 * time.Millisecond
	backoffMax = 30 * time.Second
)

// run lists, then watches from the list's resource version, again and again: a watch the server
// ended is resumed where it was; one whose resource version is too old (410) lists again; a
// failure backs off and tries the watch again (or the list, if there was none yet).
func (in *informer) run(ctx context.Context, fail func(string, error), listed func(*informer)) {
	delay := time.Duration(0)
	wait := func(err error) bool {
		if err != nil {
			fail(in.gvk.Kind, err)
		}
		delay = min(max(2*delay, backoffMin), backoffMax)
		t := time.NewTimer(delay/2 + rand.N(delay/2))
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		}
	}
	for ctx.Err() == nil {
		rv, err := in.list(ctx)
		if err != nil {
			if ctx.Err() != nil || !wait(err) {
				return
			}
			continue
		}
		delay = 0
		listed(in)
		for ctx.Err() == nil {
			began := time.Now()
			next, got, err := in.watch(ctx, rv)
			if got {
				delay = 0
			}
			rv = next
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
func (in *informer) list(ctx context.Context) (string, error) {
	list, err := in.scheme.New(in.gvk.GroupVersion().WithKind(in.gvk.Kind + "List"))
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err = in.request(metav1.ListOptions{}).Do(ctx).Into(list)
	if err != nil {
		return "", err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return "", err
	}
	rv := ""
	if lm, err := meta.ListAccessor(list); err == nil {
		rv = lm.GetResourceVersion()
	}
	objs := make([]any, 0, len(items))
	for _, it := range items {
		o, err := in.trim(it)
		if err != nil {
			return "", err
		}
		objs = append(objs, o)
	}
	first := !in.synced.Load()
	before := map[string]any{}
	if !first {
		for _, o := range in.store.List() {
			k, _ := toolscache.MetaNamespaceKeyFunc(o)
			before[k] = o
		}
	}
	if err := in.store.Replace(objs, rv); err != nil {
		return "", err
	}
	in.lastRV.Store(rv)
	h := in.kind.Handler
	if h == nil {
		return rv, nil
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
	return rv, nil
}

// watch follows changes from rv until the stream ends; it returns the resource version reached,
// whether any event came, and why it ended (nil: the server ended it).
func (in *informer) watch(ctx context.Context, rv string) (string, bool, error) {
	timeout := int64((in.watchTimeout + rand.N(in.watchTimeout)) / time.Second)
	body, err := in.request(metav1.ListOptions{Watch: true, ResourceVersion: rv, AllowWatchBookmarks: true, TimeoutSeconds: &timeout}).Stream(ctx)
	if err != nil {
		return rv, false, err
	}
	defer body.Close()
	info, ok := runtime.SerializerInfoForMediaType(in.codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok || info.StreamSerializer == nil {
		return rv, false, errors.New("no JSON stream decoder")
	}
	dec := restwatch.NewDecoder(streaming.NewDecoder(info.StreamSerializer.NewFrameReader(body), info.StreamSerializer.Serializer),
		in.codecs.UniversalDeserializer())
	got := false
	for {
		typ, obj, err := dec.Decode()
		switch {
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
		if err := in.apply(typ, obj); err != nil {
			return rv, got, err
		}
		in.lastRV.Store(rv)
	}
}

// apply keeps one event in the store and tells the handler.
func (in *informer) apply(typ watch.EventType, obj runtime.Object) error {
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
