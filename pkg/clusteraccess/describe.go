package clusteraccess

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Failure is what kind of thing went wrong talking to a user cluster.
type Failure string

// Failures.
const (
	// FailureUnreachable: no answer (refused, timed out, name does not resolve, TLS failed).
	FailureUnreachable Failure = "Unreachable"
	// FailureCredentials: the server refused the credentials (HTTP 401) or their rights (403).
	FailureCredentials Failure = "CredentialsRefused"
	// FailureServer: the server answered with another error.
	FailureServer Failure = "ServerError"
	// FailureBudget: the cluster holds more objects of a kind than the per-cluster budget, or
	// one larger than the object size limit (Options.MaxObjects, MaxObjectBytes).
	FailureBudget Failure = "ObjectBudgetExceeded"
)

// Describe returns a short, fixed description of an error from a user-cluster request, and its
// kind. Nothing the endpoint sent is in it: a kubeconfig's server URL may point anywhere (another
// cluster, a metadata service, an internal web page), and whatever it answers must not become
// readable through status, Events or logs. Only the HTTP status code and fixed texts chosen here
// are used; the server's own messages, reasons, bodies and certificate names are dropped.
func Describe(err error) (string, Failure) {
	if err == nil {
		return "", ""
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := int(status.Status().Code)
		switch {
		case code == http.StatusUnauthorized:
			return "HTTP 401: the server refused the credentials", FailureCredentials
		case code == http.StatusForbidden:
			return "HTTP 403: the credentials lack a permission Shardgate needs", FailureCredentials
		case code == http.StatusNotFound:
			return "HTTP 404: not found", FailureServer
		case code == http.StatusConflict:
			return "HTTP 409: conflict", FailureServer
		case code == http.StatusTooManyRequests:
			return "HTTP 429: the server is throttling requests", FailureServer
		case code >= 500 && code <= 599:
			return fmt.Sprintf("HTTP %d: server error", code), FailureUnreachable
		case code >= 400 && code <= 499:
			return fmt.Sprintf("HTTP %d: request refused", code), FailureServer
		case code == 0:
			// client-go reports decoding and transport problems as a Status without a code.
			return "the server's answer could not be understood", FailureUnreachable
		default:
			return fmt.Sprintf("HTTP %d: unexpected answer", code), FailureUnreachable
		}
	}
	var certErr *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalidCert x509.CertificateInvalidError
	var recordErr tls.RecordHeaderError
	var alert tls.AlertError
	var dnsErr *net.DNSError
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out", FailureUnreachable
	case errors.Is(err, context.Canceled):
		return "cancelled", FailureUnreachable
	case errors.As(err, &certErr), errors.As(err, &unknownCA), errors.As(err, &hostErr), errors.As(err, &invalidCert):
		return "TLS: the server's certificate is not trusted by the kubeconfig's CA", FailureUnreachable
	case errors.As(err, &recordErr):
		return "TLS: the server does not speak TLS", FailureUnreachable
	case errors.As(err, &alert):
		return "TLS: the server refused the handshake", FailureUnreachable
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused", FailureUnreachable
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed by the server", FailureUnreachable
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "no route to the server", FailureUnreachable
	case errors.As(err, &dnsErr):
		return "the server's name does not resolve", FailureUnreachable
	case errors.As(err, &netErr) && netErr.Timeout():
		return "timed out", FailureUnreachable
	}
	return "request failed", FailureUnreachable
}

// DescribeError is Describe as an error, for errors that leave a controller (returned errors
// are logged): what was attempted, then the fixed description. It does not wrap err.
func DescribeError(what string, err error) error {
	if err == nil {
		return nil
	}
	d, _ := Describe(err)
	return fmt.Errorf("%s: %s", what, d)
}
