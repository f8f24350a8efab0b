package clusteraccess

import (
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/shardgate/shardgate/test/framework"
)

// TestReview38ReengageRacingARotationLeaksAnEngagement (review38 finding, fails on purpose):
// Engage reads the running engagement (old) under e.mu, lets go of the lock to parse the
// kubeconfig and build the new one, then installs it and stops old. rightsLoop's reengage (its
// rights came back: every RightsInterval while some kind is forbidden) may replace old in that
// window: Engage then overwrites reengage's engagement in the map and stops only old, so the
// engagement reengage started is never stopped: its first-contact loop (and, once it reaches the
// server, its cache, watches and probe, with the credentials of the rotated-away kubeconfig) runs
// for the life of the process, Disengage and Stop cannot reach it. S rotates a kubeconfig Secret
// whenever it likes; the rights loop fires every 30 s in every cluster with a forbidden kind.
// Here the rights loop's call is made directly (reengage), at the moment of each rotation.
func TestReview38ReengageRacingARotationLeaksAnEngagement(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	ca := httptest.NewTLSServer(http.NotFoundHandler())
	ca.Close()
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Certificate().Raw})
	kc := func(i int) []byte {
		b, err := framework.KubeconfigFor("https://"+l.Addr().String(), caPEM, fmt.Sprintf("token-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		// S's Secret may be up to 1 MiB: unused entries make Engage's unlocked parse take a while.
		cfg, err := clientcmd.Load(b)
		if err != nil {
			t.Fatal(err)
		}
		for j := range 500 {
			cfg.Clusters[fmt.Sprintf("unused-%d", j)] = &clientcmdapi.Cluster{Server: "https://unused.invalid"}
		}
		if b, err = clientcmd.Write(*cfg); err != nil {
			t.Fatal(err)
		}
		return b
	}
	e, err := NewEngager(Options{RouteKinds: testRouteKinds, Log: logr.Discard(), ConnectTimeout: 10 * time.Second,
		ConnectBackoff: time.Hour, MaxConnectBackoff: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "default", Name: "rotating"}
	if err := e.Engage(key, kc(0), Settings{}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 100; i++ {
		e.mu.Lock()
		c := e.clusters[key]
		e.mu.Unlock()
		rotated := kc(i)
		var start, done sync.WaitGroup
		start.Add(1)
		done.Add(2)
		go func() {
			defer done.Done()
			start.Wait()
			if err := e.Engage(key, rotated, Settings{}); err != nil {
				t.Error(err)
			}
		}() // S rotates the Secret
		go func() {
			defer done.Done()
			start.Wait()
			time.Sleep(time.Duration(i%8) * 500 * time.Microsecond)
			e.reengage(c)
		}() // the rights loop fires
		start.Done()
		done.Wait()
	}
	{
		buf := make([]byte, 64<<20)
		t.Log("before stop", strings.Count(string(buf[:runtime.Stack(buf, true)]), "clusteraccess.(*engaged).run("))
	}
	e.Stop() // every engagement the Engager knows is stopped
	var left int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		buf := make([]byte, 64<<20)
		left = strings.Count(string(buf[:runtime.Stack(buf, true)]), "clusteraccess.(*engaged).run(")
		if left == 0 {
			return
		}
	}
	t.Errorf("after Stop, %d engagements still run (first contact retried forever with a rotated-away kubeconfig): "+
		"reengage's engagement replaced in the map by a concurrent Engage is never stopped", left)
}
