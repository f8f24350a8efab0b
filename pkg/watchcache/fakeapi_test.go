package watchcache

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// fakeAPI is an API server on loopback that serves ConfigMaps the way a kube-apiserver does, as
// far as the cache relies on it: a list at the current resource version; a watch from a
// resource version that replays every later change as chunked JSON events and then follows new
// ones; a watch from before the oldest version it keeps (compact) answered with a 410 ERROR
// event; streamed lists (sendInitialEvents) ending with the initial-events bookmark; and
// bookmarks when asked. The test changes its objects and ends, fails or refuses watches, and
// reads which requests the cache made.
type fakeAPI struct {
	t *testing.T

	mu     sync.Mutex
	rv     int
	objs   map[string]*corev1.ConfigMap // by namespace/name
	log    []fakeEvent
	oldest int           // watches from before this resource version are too old (410)
	woken  chan struct{} // closed and replaced at each change: wakes the open watches
	stop   chan struct{} // closed and replaced by endWatches: ends the open watches
	// failWatches: the next watches are answered with this HTTP status (410: Gone), one each.
	failWatches []int
	// refuseStreaming: a streamed list is answered 422 Invalid (Kubernetes 1.33, or WatchList off).
	refuseStreaming bool
	// endAtOnce: every watch ends as soon as it is opened (a proxy that cuts streams).
	endAtOnce bool
	// gate, while paused, holds every new request until resume: changes made meanwhile are
	// found by the next request, never by a watch that raced them.
	gate     chan struct{}
	requests []string // "list", "watch <rv>", "stream"
}

type fakeEvent struct {
	typ watch.EventType
	obj []byte
	rv  int
}

// newFakeAPI serves objs (named "ns/name"), created at resource versions 1, 2, ….
func newFakeAPI(t *testing.T, objs ...string) (*fakeAPI, *httptest.Server) {
	t.Helper()
	a := &fakeAPI{t: t, objs: map[string]*corev1.ConfigMap{}, woken: make(chan struct{}), stop: make(chan struct{})}
	for _, o := range objs {
		a.create(o, nil)
	}
	srv := httptest.NewServer(a)
	// Open watches end first: Close waits for the handlers.
	t.Cleanup(func() { a.endWatches(); srv.Close() })
	return a, srv
}

// change records one change under a.mu and wakes the open watches.
func (a *fakeAPI) change(typ watch.EventType, cm *corev1.ConfigMap) int {
	a.rv++
	cm.ResourceVersion = strconv.Itoa(a.rv)
	a.log = append(a.log, fakeEvent{typ: typ, obj: a.marshal(cm), rv: a.rv})
	close(a.woken)
	a.woken = make(chan struct{})
	return a.rv
}

func (a *fakeAPI) marshal(cm *corev1.ConfigMap) []byte {
	cm = cm.DeepCopy()
	cm.TypeMeta = metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"}
	b, err := json.Marshal(cm)
	if err != nil {
		a.t.Error(err)
	}
	return b
}

// create adds the ConfigMap key with labels and returns its resource version.
func (a *fakeAPI) create(key string, labels map[string]string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	ns, name, _ := strings.Cut(key, "/")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels,
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "test"}}}}
	a.objs[key] = cm
	return a.change(watch.Added, cm)
}

// update sets data v=value on key and returns its resource version.
func (a *fakeAPI) update(key, value string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	cm := a.objs[key]
	cm.Data = map[string]string{"v": value}
	return a.change(watch.Modified, cm)
}

// remove deletes key and returns the resource version of its deletion.
func (a *fakeAPI) remove(key string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	cm := a.objs[key]
	delete(a.objs, key)
	return a.change(watch.Deleted, cm)
}

// bookmark sends a bookmark at a new resource version to the watches that asked for them.
func (a *fakeAPI) bookmark() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rv++
	b := a.marshal(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: strconv.Itoa(a.rv)}})
	a.log = append(a.log, fakeEvent{typ: watch.Bookmark, obj: b, rv: a.rv})
	close(a.woken)
	a.woken = make(chan struct{})
	return a.rv
}

// compact forgets every change up to now: a watch from an older version is too old.
func (a *fakeAPI) compact() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.oldest = a.rv
}

// endWatches ends every open watch, as the server does at its timeout, before it writes any
// change made after this call.
func (a *fakeAPI) endWatches() {
	a.mu.Lock()
	defer a.mu.Unlock()
	close(a.stop)
	a.stop = make(chan struct{})
}

// failNext answers the next watches with these HTTP statuses, one each.
func (a *fakeAPI) failNext(codes ...int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.failWatches = append(a.failWatches, codes...)
}

// pause holds new requests until resume.
func (a *fakeAPI) pause() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.gate = make(chan struct{})
}

func (a *fakeAPI) resume() {
	a.mu.Lock()
	defer a.mu.Unlock()
	close(a.gate)
	a.gate = nil
}

func (a *fakeAPI) set(f func(a *fakeAPI)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f(a)
}

func (a *fakeAPI) requestLog() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.requests)
}

func (a *fakeAPI) count(req string) int {
	n := 0
	for _, r := range a.requestLog() {
		if r == req {
			n++
		}
	}
	return n
}

func (a *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/configmaps" {
		http.NotFound(w, r)
		return
	}
	a.mu.Lock()
	gate := a.gate
	a.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
	}
	q := r.URL.Query()
	switch {
	case q.Get("watch") != "true":
		a.list(w)
	case q.Get("sendInitialEvents") == "true":
		a.streamList(w, r)
	default:
		a.watch(w, r)
	}
}

func (a *fakeAPI) list(w http.ResponseWriter) {
	a.mu.Lock()
	a.requests = append(a.requests, "list")
	items := make([]json.RawMessage, 0, len(a.objs))
	for _, k := range slices.Sorted(maps.Keys(a.objs)) {
		items = append(items, a.marshal(a.objs[k]))
	}
	rv := a.rv
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"kind": "ConfigMapList", "apiVersion": "v1",
		"metadata": map[string]string{"resourceVersion": strconv.Itoa(rv)}, "items": items})
}

func status(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: metav1.StatusFailure, Code: int32(code), Reason: reason, Message: msg})
}

func (a *fakeAPI) watch(w http.ResponseWriter, r *http.Request) {
	from, err := strconv.Atoi(r.URL.Query().Get("resourceVersion"))
	if err != nil {
		a.t.Errorf("a watch without a resource version: %s", r.URL.RawQuery)
		status(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "no resourceVersion")
		return
	}
	a.mu.Lock()
	a.requests = append(a.requests, fmt.Sprint("watch ", from))
	var fail int
	if len(a.failWatches) > 0 {
		fail, a.failWatches = a.failWatches[0], a.failWatches[1:]
	}
	oldest, endAtOnce := a.oldest, a.endAtOnce
	a.mu.Unlock()
	switch fail {
	case 0:
	case http.StatusGone:
		status(w, fail, metav1.StatusReasonGone, "gone")
		return
	default:
		status(w, fail, metav1.StatusReasonInternalError, "a moment's trouble")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if from < oldest {
		// What a kube-apiserver answers: 200, then one ERROR event.
		a.send(w, watch.Error, expired(from, oldest))
		return
	}
	if endAtOnce {
		return
	}
	a.follow(w, r, from, r.URL.Query().Get("allowWatchBookmarks") == "true")
}

func expired(from, oldest int) []byte {
	b, _ := json.Marshal(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
		Code: http.StatusGone, Reason: metav1.StatusReasonExpired,
		Message: fmt.Sprintf("too old resource version: %d (%d)", from, oldest)})
	return b
}

// follow writes every change after from, then each new one, until the watch is ended.
func (a *fakeAPI) follow(w http.ResponseWriter, r *http.Request, from int, bookmarks bool) {
	a.mu.Lock()
	stop := a.stop
	a.mu.Unlock()
	for {
		a.mu.Lock()
		select {
		case <-stop: // checked under the lock: no change made after endWatches is written
			a.mu.Unlock()
			return
		default:
		}
		var pending []fakeEvent
		for _, e := range a.log {
			if e.rv > from && (e.typ != watch.Bookmark || bookmarks) {
				pending = append(pending, e)
			}
		}
		if len(a.log) > 0 {
			from = max(from, a.log[len(a.log)-1].rv)
		}
		woken := a.woken
		a.mu.Unlock()
		for _, e := range pending {
			if !a.send(w, e.typ, e.obj) {
				return
			}
		}
		select {
		case <-woken:
		case <-stop:
			return
		case <-r.Context().Done():
			return
		}
	}
}

// send writes one event and flushes it (false: the client is gone).
func (a *fakeAPI) send(w http.ResponseWriter, typ watch.EventType, obj []byte) bool {
	b, _ := json.Marshal(map[string]any{"type": typ, "object": json.RawMessage(obj)})
	if _, err := w.Write(append(b, '\n')); err != nil {
		return false
	}
	w.(http.Flusher).Flush()
	return true
}

// streamList sends every object as ADDED, the bookmark that ends the initial events, then
// follows as a watch from there.
func (a *fakeAPI) streamList(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.requests = append(a.requests, "stream")
	refuse := a.refuseStreaming
	var objs [][]byte
	for _, k := range slices.Sorted(maps.Keys(a.objs)) {
		objs = append(objs, a.marshal(a.objs[k]))
	}
	rv := a.rv
	a.mu.Unlock()
	if refuse {
		status(w, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "sendInitialEvents is forbidden for watch")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	for _, o := range objs {
		if !a.send(w, watch.Added, o) {
			return
		}
	}
	end := a.marshal(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: strconv.Itoa(rv),
		Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}})
	if !a.send(w, watch.Bookmark, end) {
		return
	}
	a.follow(w, r, rv, true)
}
