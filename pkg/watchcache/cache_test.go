package watchcache

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/test/framework"
)

// recorder keeps the events a handler was told, as "add|update|delete ns/name".
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) add(what string, obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, _ := meta.Accessor(obj)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, what+" "+m.GetNamespace()+"/"+m.GetName())
}

func (r *recorder) handler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			what := "add"
			if initial {
				what = "initial"
			}
			r.add(what, obj)
		},
		UpdateFunc: func(_, obj any) { r.add("update", obj) },
		DeleteFunc: func(obj any) { r.add("delete", obj) },
	}
}

func (r *recorder) has(e string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.events, e)
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("not within 20 s: %s", what)
}

// TestCacheFollowsARealAPIServer: against a real kube-apiserver, the cache lists (initial adds),
// follows creations, updates and deletions through watches that the server ends every second or
// two (each resumed where it was), keeps only what the server-side label selector matches, and
// serves Get and List from its store, copies only. A watch costs at most two goroutines.
func TestCacheFollowsARealAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	if _, err := framework.LocateTools(framework.ToolKubeAPIServer, framework.ToolEtcd); err != nil {
		t.Skipf("needs a real API server: %v", err)
	}
	cp := framework.StartControlPlane(t, "user", framework.ControlPlaneOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	api := cp.Client
	mk := func(ns, name string, lbl map[string]string) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbl}, Data: map[string]string{"v": "1"}}
		if err := api.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		return cm
	}
	for _, ns := range []string{"a", "b"} {
		if err := api.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	mine := map[string]string{"owner": "me"}
	mk("a", "before", mine)
	mk("a", "foreign", nil)

	scheme := clientgoscheme.Scheme
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Namespace"), meta.RESTScopeRoot)
	var cms, nss recorder
	synced := make(chan struct{})
	var errs []string
	var errMu sync.Mutex
	goroutines := runtime.NumGoroutine()
	c, err := New(cp.Config, Options{Scheme: scheme, Mapper: mapper, WatchTimeout: time.Second,
		OnSynced: func() { close(synced) },
		OnError: func(kind string, err error) {
			errMu.Lock()
			defer errMu.Unlock()
			errs = append(errs, fmt.Sprintf("%s: %v", kind, err))
		}}, []Kind{
		{Object: &corev1.ConfigMap{}, Labels: labels.SelectorFromSet(mine), Handler: cms.handler()},
		{Object: &corev1.Namespace{}, Fields: fields.OneTermNotEqualSelector("metadata.name", "b"), Handler: nss.handler()},
	})
	if err != nil {
		t.Fatal(err)
	}
	cctx, stop := context.WithCancel(ctx)
	c.Start(cctx)
	select {
	case <-synced:
	case <-ctx.Done():
		t.Fatal("never synced")
	}
	if !c.Synced() || !cms.has("initial a/before") || cms.has("initial a/foreign") || !nss.has("initial /a") || nss.has("initial /b") {
		t.Fatalf("initial list: configmaps %v, namespaces %v", cms.events, nss.events)
	}

	// Changes after the sync, across several server-ended watches.
	time.Sleep(2500 * time.Millisecond) // the first watches have ended and been resumed
	created := mk("b", "later", mine)
	eventually(t, "the creation", func() bool { return cms.has("add b/later") })
	created.Data["v"] = "2"
	if err := api.Update(ctx, created); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the update", func() bool { return cms.has("update b/later") })
	got := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "b", Name: "later"}, got); err != nil || got.Data["v"] != "2" {
		t.Fatalf("Get after the update: %v %v", got.Data, err)
	}
	if len(got.ManagedFields) != 0 {
		t.Fatal("managedFields are kept")
	}
	// A copy: changing it changes nothing in the cache.
	got.Data["v"] = "mutated"
	again := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "b", Name: "later"}, again); err != nil || again.Data["v"] != "2" {
		t.Fatalf("the cache handed out its own object: %v %v", again.Data, err)
	}
	mk("a", "second", map[string]string{"owner": "me", "tier": "x"})
	eventually(t, "the second creation", func() bool { return cms.has("add a/second") })

	// Lists: all, one namespace, a label selector; field selectors are refused.
	names := func(opts ...client.ListOption) []string {
		var l corev1.ConfigMapList
		if err := c.List(ctx, &l, opts...); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, cm := range l.Items {
			out = append(out, cm.Namespace+"/"+cm.Name)
		}
		slices.Sort(out)
		return out
	}
	if got := fmt.Sprint(names()); got != "[a/before a/second b/later]" {
		t.Fatalf("List: %s", got)
	}
	if got := fmt.Sprint(names(client.InNamespace("a"))); got != "[a/before a/second]" {
		t.Fatalf("List in a: %s", got)
	}
	if got := fmt.Sprint(names(client.MatchingLabels{"tier": "x"})); got != "[a/second]" {
		t.Fatalf("List tier=x: %s", got)
	}
	if err := c.List(ctx, &corev1.ConfigMapList{}, client.MatchingFields{"metadata.name": "x"}); err == nil {
		t.Fatal("a field selector was accepted")
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "foreign"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Fatalf("an object the selector excludes: %v, want NotFound", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "x"}, &corev1.Secret{}); err == nil || apierrors.IsNotFound(err) {
		t.Fatalf("a kind the cache does not hold: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "a"}, &corev1.Namespace{}); err != nil {
		t.Fatalf("a cluster-scoped object: %v", err)
	}

	// Deletion.
	if err := api.Delete(ctx, created); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deletion", func() bool { return cms.has("delete b/later") })
	if err := c.Get(ctx, client.ObjectKey{Namespace: "b", Name: "later"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Get after the deletion: %v", err)
	}

	// Two kinds: at most two goroutines each (the cache's and the HTTP/2 stream's) and the
	// connection's reader.
	if n := runtime.NumGoroutine() - goroutines; n > 2*2+1 {
		t.Errorf("%d goroutines for two watches", n)
	}
	stop()
	c.Wait()
	errMu.Lock()
	defer errMu.Unlock()
	if len(errs) > 0 {
		t.Errorf("errors reported while the server was up: %v", errs)
	}
}
