package framework

import (
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// HostileMode is how a HostileServer answers.
type HostileMode int

// Hostile server modes.
const (
	// HostileAnswer answers every request with a body holding Secret (a page, a metadata
	// document, a fake API error): what a kubeconfig's server URL pointed at another endpoint
	// would read.
	HostileAnswer HostileMode = iota
	// HostileHang accepts connections and TLS, then never answers.
	HostileHang
)

// HostileServer stands in for an endpoint an attacker points a kubeconfig at: a TLS server on
// loopback that records the credentials it is sent and answers with a marker that must never be
// seen in the seed.
type HostileServer struct {
	// Secret is the marker in every answer.
	Secret string
	srv    *httptest.Server
	hang   chan struct{}

	mu    sync.Mutex
	auths []string
	hits  int
}

// StartHostileServer starts a hostile TLS server on 127.0.0.1 until t ends.
func StartHostileServer(t testing.TB, mode HostileMode, secret string) *HostileServer {
	t.Helper()
	h := &HostileServer{Secret: secret, hang: make(chan struct{})}
	h.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.hits++
		if a := r.Header.Get("Authorization"); a != "" {
			h.auths = append(h.auths, a)
		}
		h.mu.Unlock()
		if mode == HostileHang {
			<-h.hang
			return
		}
		switch r.URL.Path {
		case "/version":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"gitVersion":"` + secret + `","major":"1","minor":"37"}`))
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","code":403,"reason":"` + secret + `","message":"` + secret + `"}`))
		}
	}))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.srv.Listener = l
	h.srv.StartTLS()
	t.Cleanup(func() {
		close(h.hang)
		h.srv.Close()
	})
	return h
}

// URL is the server's https address.
func (h *HostileServer) URL() string { return h.srv.URL }

// Kubeconfig returns a kubeconfig for the server (its CA inline), with mutate applied to the
// user entry.
func (h *HostileServer) Kubeconfig(mutate func(*clientcmdapi.AuthInfo)) ([]byte, error) {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.srv.Certificate().Raw})
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: h.srv.URL, CertificateAuthorityData: ca}
	u := &clientcmdapi.AuthInfo{Token: "tenant-token"}
	if mutate != nil {
		mutate(u)
	}
	kc.AuthInfos["u"] = u
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "c"
	return clientcmd.Write(*kc)
}

// Authorizations are the Authorization headers the server received; Hits counts requests.
func (h *HostileServer) Authorizations() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.auths...)
}

// Hits is how many requests the server received.
func (h *HostileServer) Hits() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hits
}
