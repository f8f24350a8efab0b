package watchcache

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// These tests hold the cache to what it promises (list, then watch from the list's resource
// version; resume an ended or failed watch where it was; list again on 410; bookmarks move the
// resume point; streamed lists) against fakeAPI, so they need no kube-apiserver and run in
// every `go test`. cache_test.go checks the same against a real one when the tools are built.

// errorLog keeps what OnError was told.
type errorLog struct {
	mu   sync.Mutex
	errs []error
}

func (l *errorLog) add(_ string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, err)
}

func (l *errorLog) list() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.errs)
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// startFake starts a cache of ConfigMaps served by srv and waits until it synced.
func startFake(t *testing.T, srv *httptest.Server, streaming bool) (*Cache, *recorder, *errorLog) {
	t.Helper()
	return startFakeKind(t, srv, Options{StreamingLists: streaming}, Kind{})
}

// startFakeKind starts a cache of ConfigMaps (as kind says) with opts served by srv and, unless
// the kind is on demand (a cache of those alone never syncs), waits until it synced.
func startFakeKind(t *testing.T, srv *httptest.Server, opts Options, kind Kind) (*Cache, *recorder, *errorLog) {
	t.Helper()
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	rec, errs := &recorder{}, &errorLog{}
	synced := make(chan struct{})
	opts.Scheme, opts.Mapper, opts.OnError, opts.OnSynced = clientgoscheme.Scheme, mapper, errs.add, func() { close(synced) }
	kind.Object, kind.Handler = &corev1.ConfigMap{}, rec.handler()
	c, err := New(&rest.Config{Host: srv.URL}, opts, []Kind{kind})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(func() { cancel(); c.Wait() })
	if kind.OnDemand {
		c.Start(ctx)
		return c, rec, errs
	}
	stop := startSynced(ctx, t, c, synced)
	t.Cleanup(stop)
	return c, rec, errs
}

// stored are the names the cache holds and the resource version its List says.
func stored(t *testing.T, c *Cache) ([]string, string) {
	t.Helper()
	l := &corev1.ConfigMapList{}
	if err := c.List(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, cm := range l.Items {
		out = append(out, cm.Namespace+"/"+cm.Name)
	}
	slices.Sort(out)
	return out, l.ResourceVersion
}

func waitRequest(t *testing.T, api *fakeAPI, req string) {
	t.Helper()
	eventually(t, "request "+req+" (made: "+fmt.Sprint(api.requestLog())+")", func() bool { return api.count(req) > 0 })
}

// TestListThenWatchFollowsEveryChange: the first list's objects are initial adds; the watch
// starts at the list's resource version; a creation, an update and a deletion reach the handler
// in order and the store; reads are copies without managedFields; List says the version reached.
func TestListThenWatchFollowsEveryChange(t *testing.T) {
	api, srv := newFakeAPI(t, "ns/a", "ns/b")
	c, rec, _ := startFake(t, srv, false)
	if got := rec.list(); !slices.Equal(got, []string{"initial ns/a", "initial ns/b"}) {
		t.Fatalf("events after the list: %v", got)
	}
	waitRequest(t, api, "watch 2")

	api.create("ns/c", nil)
	api.update("ns/a", "2")
	last := api.remove("ns/b")
	eventually(t, "the deletion reaches the handler", func() bool { return rec.has("delete ns/b") })
	if got := rec.list()[2:]; !slices.Equal(got, []string{"add ns/c", "update ns/a", "delete ns/b"}) {
		t.Errorf("events from the watch: %v", got)
	}
	names, rv := stored(t, c)
	if !slices.Equal(names, []string{"ns/a", "ns/c"}) || rv != strconv.Itoa(last) {
		t.Errorf("store %v at %q, want [ns/a ns/c] at %d", names, rv, last)
	}
	a := &corev1.ConfigMap{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "a"}, a); err != nil {
		t.Fatal(err)
	}
	if a.Data["v"] != "2" || a.ManagedFields != nil {
		t.Errorf("ns/a: data %v, managedFields %v", a.Data, a.ManagedFields)
	}
	a.Data["v"] = "changed by the reader"
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "a"}, a); err != nil || a.Data["v"] != "2" {
		t.Errorf("a reader's change reached the store: %v %v", a.Data, err)
	}
	err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "b"}, &corev1.ConfigMap{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("deleted ns/b: %v", err)
	}
	if n := api.count("list"); n != 1 {
		t.Errorf("%d lists, want 1: %v", n, api.requestLog())
	}
}

// TestAnEndedWatchResumesWhereItWas: a watch the server ends is opened again from the last
// resource version seen, without a list: nothing is told twice, nothing is missed.
func TestAnEndedWatchResumesWhereItWas(t *testing.T) {
	api, srv := newFakeAPI(t, "ns/a")
	c, rec, _ := startFake(t, srv, false)
	x := api.create("ns/x", nil)
	eventually(t, "ns/x added", func() bool { return rec.has("add ns/x") })
	api.endWatches()
	api.create("ns/y", nil)
	eventually(t, "ns/y added", func() bool { return rec.has("add ns/y") })
	waitRequest(t, api, fmt.Sprint("watch ", x))
	if got := rec.list(); !slices.Equal(got, []string{"initial ns/a", "add ns/x", "add ns/y"}) {
		t.Errorf("events %v", got)
	}
	if n := api.count("list"); n != 1 {
		t.Errorf("%d lists, want 1: %v", n, api.requestLog())
	}
	if names, _ := stored(t, c); !slices.Equal(names, []string{"ns/a", "ns/x", "ns/y"}) {
		t.Errorf("store %v", names)
	}
}

// TestAFailedWatchIsRetriedFromTheSameVersion: a watch the server refuses (500) is told to
// OnError and tried again, backing off, from the same resource version, without a list.
func TestAFailedWatchIsRetriedFromTheSameVersion(t *testing.T) {
	api, srv := newFakeAPI(t, "ns/a")
	_, rec, errs := startFake(t, srv, false)
	waitRequest(t, api, "watch 1")
	api.failNext(http.StatusInternalServerError)
	api.endWatches()
	eventually(t, "a second watch from 1", func() bool { return api.count("watch 1") >= 3 })
	if e := errs.list(); len(e) == 0 || !apierrors.IsInternalError(e[0]) {
		t.Errorf("OnError was told %v", e)
	}
	api.create("ns/z", nil)
	eventually(t, "ns/z added", func() bool { return rec.has("add ns/z") })
	for _, r := range api.requestLog() {
		if r != "list" && r != "watch 1" {
			t.Errorf("request %q: want every watch from 1 (%v)", r, api.requestLog())
		}
	}
	if n := api.count("list"); n != 1 {
		t.Errorf("%d lists, want 1", n)
	}
}

// TestATooOldResourceVersionListsAgain: a watch answered 410 (an ERROR event "too old resource
// version" after the server compacted, or the request itself refused Gone) makes the cache list
// again; the difference reaches the handler: the object deleted meanwhile as a final state
// unknown, the one created as an add that is not initial.
func TestATooOldResourceVersionListsAgain(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(api *fakeAPI)
	}{
		{name: "ERROR event Expired", make: func(api *fakeAPI) { api.compact() }},
		{name: "HTTP 410 Gone", make: func(api *fakeAPI) { api.failNext(http.StatusGone) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api, srv := newFakeAPI(t, "ns/a", "ns/b")
			c, rec, _ := startFake(t, srv, false)
			waitRequest(t, api, "watch 2")
			// Changes the open watch never sends, found only by the next request.
			api.pause()
			api.endWatches()
			api.remove("ns/b")
			last := api.create("ns/c", nil)
			tc.make(api)
			api.resume()
			eventually(t, "the second list", func() bool { return api.count("list") == 2 })
			eventually(t, "the relist's difference told", func() bool { return rec.has("delete ns/b") && rec.has("add ns/c") })
			if got := rec.list(); !slices.Equal(got, []string{"initial ns/a", "initial ns/b", "delete ns/b", "add ns/c"}) &&
				!slices.Equal(got, []string{"initial ns/a", "initial ns/b", "add ns/c", "delete ns/b"}) {
				t.Errorf("events %v", got)
			}
			names, rv := stored(t, c)
			if !slices.Equal(names, []string{"ns/a", "ns/c"}) || rv != strconv.Itoa(last) {
				t.Errorf("store %v at %q, want [ns/a ns/c] at %d", names, rv, last)
			}
			waitRequest(t, api, fmt.Sprint("watch ", last))
		})
	}
}

// TestABookmarkMovesTheResumePoint: the cache asks for bookmarks; one moves the version it
// resumes from (so a server that compacted up to it needs no list), and is no object: no event,
// nothing stored.
func TestABookmarkMovesTheResumePoint(t *testing.T) {
	api, srv := newFakeAPI(t, "ns/a")
	c, rec, _ := startFake(t, srv, false)
	api.create("ns/x", nil)
	bm := api.bookmark()
	eventually(t, "the bookmark's version reached", func() bool { _, rv := stored(t, c); return rv == strconv.Itoa(bm) })
	api.pause()
	api.endWatches()
	api.compact()
	api.resume()
	waitRequest(t, api, fmt.Sprint("watch ", bm))
	api.create("ns/y", nil)
	eventually(t, "ns/y added", func() bool { return rec.has("add ns/y") })
	if got := rec.list(); !slices.Equal(got, []string{"initial ns/a", "add ns/x", "add ns/y"}) {
		t.Errorf("events %v", got)
	}
	if names, _ := stored(t, c); !slices.Equal(names, []string{"ns/a", "ns/x", "ns/y"}) {
		t.Errorf("store %v", names)
	}
	if n := api.count("list"); n != 1 {
		t.Errorf("%d lists, want 1: %v", n, api.requestLog())
	}
}

// TestAWatchThatEndsAtOnceIsNotResumedInATightLoop: a server (or proxy) that ends every watch as
// soon as it opens gets watches after a back-off, not as fast as the cache can ask.
func TestAWatchThatEndsAtOnceIsNotResumedInATightLoop(t *testing.T) {
	api, srv := newFakeAPI(t, "ns/a")
	startFake(t, srv, false)
	waitRequest(t, api, "watch 1")
	api.set(func(a *fakeAPI) { a.endAtOnce = true })
	api.endWatches()
	before := api.count("watch 1")
	time.Sleep(time.Second) // the window in which watches are counted, not a synchronisation
	// Backing off from 0.8 s (jittered down to half): at most three in a second.
	if n := api.count("watch 1") - before; n > 3 {
		t.Errorf("%d watches in a second", n)
	}
}

// TestStreamedList: with StreamingLists the first list is a watch that begins with the objects
// and ends its initial events with a bookmark: no list request, and the same stream follows the
// changes. A server that refuses streamed lists (422) is listed and watched instead, no error told.
func TestStreamedList(t *testing.T) {
	t.Run("served", func(t *testing.T) {
		api, srv := newFakeAPI(t, "ns/a", "ns/b")
		c, rec, errs := startFake(t, srv, true)
		if got := rec.list(); !slices.Equal(got, []string{"initial ns/a", "initial ns/b"}) {
			t.Fatalf("events after the streamed list: %v", got)
		}
		api.remove("ns/a")
		eventually(t, "ns/a deleted", func() bool { return rec.has("delete ns/a") })
		if names, _ := stored(t, c); !slices.Equal(names, []string{"ns/b"}) {
			t.Errorf("store %v", names)
		}
		if got := api.requestLog(); !slices.Equal(got, []string{"stream"}) {
			t.Errorf("requests %v, want one streamed list", got)
		}
		if e := errs.list(); len(e) != 0 {
			t.Errorf("OnError was told %v", e)
		}
	})
	t.Run("refused", func(t *testing.T) {
		api, srv := newFakeAPI(t, "ns/a")
		api.set(func(a *fakeAPI) { a.refuseStreaming = true })
		_, rec, errs := startFake(t, srv, true)
		waitRequest(t, api, "watch 1")
		if got := api.requestLog(); !slices.Equal(got[:2], []string{"stream", "list"}) {
			t.Errorf("requests %v, want a refused stream, then a list", got)
		}
		if got := rec.list(); !slices.Equal(got, []string{"initial ns/a"}) {
			t.Errorf("events %v", got)
		}
		if e := errs.list(); len(e) != 0 {
			t.Errorf("OnError was told %v", e)
		}
	})
}
