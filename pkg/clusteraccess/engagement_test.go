package clusteraccess

import (
	"context"
	"io"
	"net"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/shardgate/shardgate/test/framework"
)

// TestOneConnectionPerCluster: an engagement reaches its user cluster through one TLS connection.
// First contact (version, API discovery, the CRDs), the cache's lists and watches, the writer (a
// SelfSubjectReview, a create) and a health probe all share it: one handshake per cluster where
// separate clients made ~17 (on both sides: the user clusters' API servers do the other half of
// every handshake).
func TestOneConnectionPerCluster(t *testing.T) {
	cp := userAPIServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// A TCP relay in front of the API server counts the connections made to it.
	backend, err := url.Parse(cp.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var conns atomic.Int32
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() { // ends when either side closes
				defer in.Close()
				out, err := net.Dial("tcp", backend.Host)
				if err != nil {
					return
				}
				defer out.Close()
				go func() { _, _ = io.Copy(out, in); _ = out.Close() }()
				_, _ = io.Copy(in, out)
			}()
		}
	}()

	cfg := rest.CopyConfig(cp.Config)
	cfg.Host = "https://" + l.Addr().String()
	kc, err := framework.KubeconfigFromConfig(cfg, "user")
	if err != nil {
		t.Fatal(err)
	}
	e, cl := engageObservable(t, kc)
	defer e.Stop()
	key := types.NamespacedName{Namespace: "default", Name: "c1"}
	if _, err := cl.Identity(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cl.Writer().Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "written"}}); err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	e.clusters[key].suspectNow()
	e.mu.Unlock()
	for deadline := time.Now().Add(20 * time.Second); cl.State().Message != "health probe succeeded"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no probe: %+v", cl.State())
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections to the cluster, want 1", n)
	}
	e.Stop()
	l.Close()
}

// engageObservable engages the cluster of kubeconfig kc as default/c1 and waits until it is
// observable with Shardgate's CRDs installed; the caller stops the Engager.
func engageObservable(t *testing.T, kc []byte) (*Engager, Cluster) {
	t.Helper()
	e, err := NewEngager(Options{RouteKinds: testRouteKinds, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "default", Name: "c1"}
	if err := e.Engage(key, kc, Settings{}); err != nil {
		e.Stop()
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		c, ok := e.Get(key)
		if ok && c.Observable() {
			if !c.Capabilities().CRDs {
				e.Stop()
				t.Fatal("the CRDs were not installed")
			}
			return e, c
		}
		if time.Now().After(deadline) {
			e.Stop()
			t.Fatalf("not observable within a minute: %+v", c.State())
		}
	}
}
