package canary

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A server at a tenant-chosen address that answers garbage must not get its bytes into the
// condition through the transport's error text.
func TestHTTPGetKeepsEndpointBytesOut(t *testing.T) {
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
			_, _ = c.Write([]byte("HTTP/1.1 s3cr3t x\r\n\r\n"))
			c.Close()
		}
	}()
	get := httpGet(&http.Client{Timeout: 2 * time.Second})
	_, _, err = get(context.Background(), "http://"+l.Addr().String()+"/ping", "c.example")
	if err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("error %v", err)
	}
}
