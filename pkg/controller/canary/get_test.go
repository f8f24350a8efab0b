package canary

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	canarycheck "github.com/shardgate/shardgate/pkg/canary"
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

// TestRouterNodePortStaysInTheNodePortRange: the router Service's nodePort is what the user
// cluster's API server says; one outside the node-port range (the kubelet's 10250, etcd's 2379)
// is refused, not requested.
func TestRouterNodePortStaysInTheNodePortRange(t *testing.T) {
	svc := func(port int32) *corev1.Service {
		return &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
			{Name: "websecure", NodePort: 10250}, {Name: "web", NodePort: port}}}}
	}
	for _, tt := range []struct {
		name    string
		svc     *corev1.Service
		port    int
		refused bool
	}{
		{"in range", svc(31080), 31080, false},
		{"the kubelet's port", svc(10250), 0, true},
		{"etcd's port", svc(2379), 0, true},
		{"just above", svc(32768), 0, true},
		{"not allocated yet", svc(0), 0, false},
	} {
		port, err := routerNodePort(tt.svc, canarycheck.DefaultNodePorts)
		var refused refusedPort
		if port != tt.port || errors.As(err, &refused) != tt.refused || (tt.port == 0 && err == nil) {
			t.Errorf("%s: port %d, err %v", tt.name, port, err)
		}
	}
}
