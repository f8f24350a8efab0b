package clusteraccess

import (
	"context"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const leak = "METADATA-SECRET-c2VjcmV0"

// TestDescribeNeverRepeatsTheServer: whatever a kubeconfig's server answers (an internal page, a
// metadata service, a fake API server), the description Shardgate keeps of the error is fixed
// text: status, Events and logs cannot become a way to read other endpoints.
func TestDescribeNeverRepeatsTheServer(t *testing.T) {
	hang := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("case") {
		case "401":
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(leak))
		case "500":
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte("<html>" + leak + "</html>"))
		case "status":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"` + leak + `","reason":"` + leak + `","code":403}`))
		case "hang":
			<-hang
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"kind":"` + leak + `","apiVersion":"` + leak + `"}`))
		}
	}))
	defer srv.Close()
	defer close(hang) // runs first: Close waits for the hung handler
	cfg := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: pemCert(t, srv)}, WarningHandler: rest.NoWarnings{}}
	get := func(c string, cfg *rest.Config) error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return err
		}
		if c == "typed" {
			_, err := cs.CoreV1().Nodes().Get(ctx, "n", metav1.GetOptions{})
			return err
		}
		return cs.Discovery().RESTClient().Get().AbsPath("/readyz").Param("case", c).Do(ctx).Error()
	}
	refused, _ := net.Listen("tcp", "127.0.0.1:0")
	refusedAddr := refused.Addr().String()
	refused.Close()
	untrusted := rest.CopyConfig(cfg)
	untrusted.CAData = nil

	for _, tt := range []struct {
		name    string
		err     error
		want    string
		failure Failure
	}{
		{"401 with a body", get("401", rest.CopyConfig(cfg)), "HTTP 401", FailureCredentials},
		{"500 with a page", get("500", rest.CopyConfig(cfg)), "HTTP 500", FailureUnreachable},
		{"a Status with the server's message and reason", get("status", rest.CopyConfig(cfg)), "HTTP 403", FailureCredentials},
		{"200 that is not Kubernetes", get("typed", rest.CopyConfig(cfg)), "", FailureUnreachable},
		{"hung server", get("hang", rest.CopyConfig(cfg)), "timed out", FailureUnreachable},
		{"unknown CA", get("500", untrusted), "TLS", FailureUnreachable},
		{"connection refused", get("500", &rest.Config{Host: "https://" + refusedAddr}), "connection refused", FailureUnreachable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err == nil {
				t.Fatal("no error")
			}
			d, f := Describe(tt.err)
			if strings.Contains(d, leak) || strings.Contains(d, "127.0.0.1") || strings.Contains(d, "httptest") {
				t.Fatalf("description repeats the server: %q (error was %q)", d, tt.err)
			}
			if !strings.Contains(d, tt.want) || f != tt.failure {
				t.Fatalf("description %q (%s), want %q (%s); error was %v", d, f, tt.want, tt.failure, tt.err)
			}
			if e := DescribeError("probe", tt.err); strings.Contains(e.Error(), leak) {
				t.Fatalf("DescribeError leaks: %v", e)
			}
		})
	}
}

func pemCert(t *testing.T, srv *httptest.Server) []byte {
	t.Helper()
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}
