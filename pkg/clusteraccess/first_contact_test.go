package clusteraccess

import (
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shardgate/shardgate/test/framework"
)

// TestFirstContactWithAServerThatClosesConnections: a user API server that accepts connections
// and closes them at once is Unreachable ("connection closed by the server") at the first failed
// attempt, not Connecting for the whole connect timeout (client-go retried such a GET ten times
// inside it) and then "timed out".
func TestFirstContactWithAServerThatClosesConnections(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	// Any CA will do: the server never gets as far as a certificate.
	ca := httptest.NewTLSServer(http.NotFoundHandler())
	ca.Close()
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Certificate().Raw})
	kc, err := framework.KubeconfigFor("https://"+l.Addr().String(), caPEM, "token")
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngager(Options{RouteKinds: testRouteKinds, Log: logr.Discard(), ConnectTimeout: 10 * time.Second, ConnectBackoff: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	key := types.NamespacedName{Namespace: "default", Name: "closing"}
	if err := e.Engage(key, kc, Settings{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var st State
	for deadline := start.Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		c, ok := e.Get(key)
		if ok {
			if st = c.State(); st.Phase != PhaseConnecting {
				break
			}
		}
	}
	if st.Phase != PhaseUnreachable || st.Reason != string(FailureUnreachable) || !strings.Contains(st.Message, "connection closed") {
		t.Fatalf("after %s: %+v, want Unreachable: connection closed", time.Since(start).Round(time.Millisecond), st)
	}
}
