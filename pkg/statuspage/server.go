package statuspage

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/tokenauth"
)

// Permission: the page shows every cluster of the seed, so it asks what `kubectl get
// clusteringresses --all-namespaces` asks: a token whose user may get ClusterIngresses in every
// namespace.
var Permission = tokenauth.Permission{
	Resource:    &authorizationv1.ResourceAttributes{Group: v1alpha1.GroupVersion.Group, Resource: "clusteringresses", Verb: "get"},
	Description: "get clusteringresses.shardgate.io in all namespaces",
}

// Server is the status page as a manager Runnable: HTTPS, every request authorised.
type Server struct {
	// BindAddress is host:port.
	BindAddress string
	// CertDir holds tls.crt and tls.key; empty: a self-signed certificate made at start (as
	// controller-runtime's secure metrics do), for clients that pin nothing.
	CertDir string
	Reader  client.Reader
	Clients kubernetes.Interface
	Log     logr.Logger
}

// NeedLeaderElection is false: every replica serves the page from its own cache.
func (s *Server) NeedLeaderElection() bool { return false }

// Start serves until ctx ends, then shuts down within five seconds.
func (s *Server) Start(ctx context.Context) error {
	h, err := NewHandler(s.Reader)
	if err != nil {
		return err
	}
	authz := &tokenauth.Authorizer{Authn: s.Clients.AuthenticationV1().TokenReviews(),
		Authz: s.Clients.AuthorizationV1().SubjectAccessReviews(), Permission: Permission}
	cert, err := s.certificate()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", s.BindAddress)
	if err != nil {
		return fmt.Errorf("status page: %w", err)
	}
	srv := &http.Server{
		Handler:           authz.Wrap(h.Routes()),
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
		WriteTimeout:      30 * time.Second,
	}
	s.Log.Info("serving the status page", "address", ln.Addr().String())
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(ln, "", "") }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return err
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (s *Server) certificate() (tls.Certificate, error) {
	if s.CertDir != "" {
		return tls.LoadX509KeyPair(filepath.Join(s.CertDir, "tls.crt"), filepath.Join(s.CertDir, "tls.key"))
	}
	host, _, err := net.SplitHostPort(s.BindAddress)
	if err != nil || host == "" {
		host = "localhost"
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host, nil, nil)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("status page certificate: %w", err)
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}
