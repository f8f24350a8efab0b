package watchcache

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// endlessServer is a hostile API server on loopback: its ConfigMap lists (plain, or streamed
// with sendInitialEvents) never end, nor do its watches, and with huge set one object never
// ends either. It counts the objects it wrote and says when the client stopped reading.
type endlessServer struct {
	huge    bool
	written atomic.Int64
	gone    chan struct{} // closed when a write failed: the client hung up
	closed  atomic.Bool
}

func (s *endlessServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/configmaps" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	q := r.URL.Query()
	watching := q.Get("watch") == "true"
	write := func(s2 string) bool {
		if _, err := w.Write([]byte(s2)); err != nil {
			if s.closed.CompareAndSwap(false, true) {
				close(s.gone)
			}
			return false
		}
		return true
	}
	item := func(i int64) string {
		return fmt.Sprintf(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm-%d","namespace":"default","resourceVersion":"%d",`+
			`"annotations":{"a":"%s"}}}`, i, i+10, strings.Repeat("x", 200))
	}
	switch {
	case !watching && s.huge:
		write(`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"5"},"items":[` +
			`{"metadata":{"name":"huge","namespace":"default","annotations":{"a":"`)
		for chunk := strings.Repeat("x", 64<<10); write(chunk); {
			s.written.Add(1)
		}
	case !watching:
		if !write(`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"5"},"items":[` + item(0)) {
			return
		}
		for i := int64(1); write("," + item(i)); i++ {
			s.written.Add(1)
		}
	default:
		// A streamed list, or a watch after a list: ADDED events without end either way.
		for i := int64(1); write(`{"type":"ADDED","object":` + item(i) + "}\n"); i++ {
			s.written.Add(1)
			if i%100 == 0 {
				w.(http.Flusher).Flush()
			}
		}
	}
}

// TestBudgetStopsAServerThatNeverEnds: a server that streams objects without end (a list, a
// streamed list, a watch after a short list, one object that never ends) puts the kind over its
// budget as soon as the budget is passed: the cache stops reading (the server sees the client
// hang up), reports a BudgetError to OnBudget, holds no more than the budget, and memory stays
// bounded; the kind is not listed again before BudgetRetry.
func TestBudgetStopsAServerThatNeverEnds(t *testing.T) {
	for _, tt := range []struct {
		name      string
		streaming bool
		huge      bool
		bytes     bool
		stored    bool
	}{
		{name: "list"},
		{name: "streamed list", streaming: true},
		{name: "one object without end", huge: true, bytes: true},
		{name: "list past the stored bytes", stored: true},
		{name: "streamed list past the stored bytes", streaming: true, stored: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			budgetStopsAServer(t, tt.streaming, tt.huge, tt.bytes, tt.stored)
		})
	}
}

func budgetStopsAServer(t *testing.T, streaming, huge, bytes, stored bool) {
	const maxBytes = 1 << 20
	maxObjects, maxStored := 1000, int64(0)
	if stored {
		maxObjects, maxStored = 0, 100<<10
	}
	srv := &endlessServer{huge: huge, gone: make(chan struct{})}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	reports := make(chan error, 10)
	c, err := New(&rest.Config{Host: hs.URL}, Options{Scheme: clientgoscheme.Scheme, Mapper: mapper, StreamingLists: streaming,
		MaxObjectBytes: maxBytes, BudgetRetry: time.Hour, OnBudget: func(kind string, err error) { reports <- err }},
		[]Kind{{Object: &corev1.ConfigMap{}, MaxObjects: maxObjects, MaxBytes: maxStored}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); c.Wait() }()
	c.Start(ctx)
	select {
	case err := <-reports:
		var be *BudgetError
		if !errors.As(err, &be) || be.Kind != "ConfigMap" || be.Bytes != bytes || be.Stored != stored {
			t.Fatalf("OnBudget was told %v", err)
		}
		if want := int64(maxObjects); !bytes && !stored && be.Limit != want {
			t.Errorf("limit %d, want %d", be.Limit, want)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the budget never tripped; the server wrote %d objects", srv.written.Load())
	}
	select {
	case <-srv.gone:
	case <-time.After(20 * time.Second):
		t.Fatalf("the cache still reads the endless answer (%d objects written)", srv.written.Load())
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.HeapAlloc > 200<<20 {
		t.Errorf("heap %d MiB after the budget tripped", ms.HeapAlloc>>20)
	}
	list := &corev1.ConfigMapList{}
	if err := c.List(ctx, list); err != nil || len(list.Items) != 0 {
		t.Errorf("the store holds %d objects (%v), want none: a list over budget is dropped", len(list.Items), err)
	}
	if c.Synced() {
		t.Error("synced from a list over budget")
	}
	written := srv.written.Load()
	time.Sleep(300 * time.Millisecond)
	if srv.written.Load() != written {
		t.Error("listed again before BudgetRetry")
	}
}

// TestBudgetStopsAnEndlessWatch: after a list within the budget, a watch whose additions pass it
// puts the kind over budget; the store keeps what it held, no more than the budget.
func TestBudgetStopsAnEndlessWatch(t *testing.T) {
	const maxObjects = 500
	srv := &shortListServer{endless: endlessServer{gone: make(chan struct{})}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	reports := make(chan error, 10)
	synced := make(chan struct{})
	c, err := New(&rest.Config{Host: hs.URL}, Options{Scheme: clientgoscheme.Scheme, Mapper: mapper, BudgetRetry: time.Hour,
		OnSynced: func() { close(synced) }, OnBudget: func(kind string, err error) { reports <- err }},
		[]Kind{{Object: &corev1.ConfigMap{}, MaxObjects: maxObjects}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); c.Wait() }()
	c.Start(ctx)
	select {
	case err := <-reports:
		if be := (*BudgetError)(nil); !errors.As(err, &be) {
			t.Fatalf("OnBudget was told %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the budget never tripped")
	}
	select {
	case <-srv.endless.gone:
	case <-time.After(20 * time.Second):
		t.Fatal("the cache still reads the endless watch")
	}
	<-synced
	list := &corev1.ConfigMapList{}
	if err := c.List(ctx, list); err != nil || len(list.Items) != maxObjects {
		t.Errorf("the store holds %d objects (%v), want the budget's %d", len(list.Items), err, maxObjects)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: fmt.Sprint("cm-", maxObjects+5)}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("an object past the budget is stored: %v", err)
	}
}

// shortListServer lists two ConfigMaps, then watches without end.
type shortListServer struct{ endless endlessServer }

func (s *shortListServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/api/v1/configmaps" && r.URL.Query().Get("watch") != "true" {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"5"},"items":[` +
			`{"metadata":{"name":"a","namespace":"default","resourceVersion":"3"}},{"metadata":{"name":"b","namespace":"default","resourceVersion":"4"}}]}`))
		return
	}
	s.endless.ServeHTTP(w, r)
}
