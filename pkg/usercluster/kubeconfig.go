package usercluster

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Keys a kubeconfig Secret may hold the kubeconfig under: Cluster API's "value", or the common
// "kubeconfig".
var kubeconfigKeys = []string{"value", "kubeconfig"}

// ErrKubeconfigInvalid marks a kubeconfig that cannot be used. Its message never contains the
// kubeconfig's content.
var ErrKubeconfigInvalid = errors.New("kubeconfig invalid")

// KubeconfigFromSecret returns the kubeconfig bytes of a kubeconfig Secret.
func KubeconfigFromSecret(s *corev1.Secret) ([]byte, error) {
	for _, k := range kubeconfigKeys {
		if b, ok := s.Data[k]; ok && len(b) > 0 {
			return b, nil
		}
	}
	return nil, fmt.Errorf("%w: Secret %s/%s has no non-empty key %q or %q", ErrKubeconfigInvalid, s.Namespace, s.Name, kubeconfigKeys[0], kubeconfigKeys[1])
}

// RESTConfig turns a user cluster's kubeconfig into a client config for long-lived caches.
//
// It refuses exec and auth-provider plugins: a kubeconfig is data handed to the seed by whoever
// can write a Secret, and must never make the controller run a program. Errors describe what is
// wrong without repeating the content.
func RESTConfig(kubeconfig []byte) (*rest.Config, error) {
	raw, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("%w: not a parseable kubeconfig", ErrKubeconfigInvalid)
	}
	ctxName := raw.CurrentContext
	ctx, ok := raw.Contexts[ctxName]
	if !ok {
		return nil, fmt.Errorf("%w: current context %q not found", ErrKubeconfigInvalid, ctxName)
	}
	if ai, ok := raw.AuthInfos[ctx.AuthInfo]; ok && (ai.Exec != nil || ai.AuthProvider != nil) {
		return nil, fmt.Errorf("%w: user %q uses an exec or auth-provider plugin, which Shardgate does not run", ErrKubeconfigInvalid, ctx.AuthInfo)
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*raw, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrKubeconfigInvalid, sanitize(err))
	}
	if cfg.Host == "" {
		return nil, fmt.Errorf("%w: no server address", ErrKubeconfigInvalid)
	}
	// Bounded connection set-up so that a dead cluster fails fast. No overall request timeout:
	// it would also cut the long-running watches the caches depend on.
	cfg.Dial = (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	// Enough for a first allocation of thousands of Ingresses; the user cluster's API priority and
	// fairness still protects it.
	cfg.QPS, cfg.Burst = 1000, 2000
	cfg.UserAgent = "shardgate-seed-controller"
	return cfg, nil
}

// sanitize keeps only the error's type-level message: clientcmd errors can quote file content.
func sanitize(err error) string {
	msg := err.Error()
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return msg
}

// fingerprint identifies a kubeconfig's content without keeping it.
func fingerprint(kubeconfig []byte) [32]byte { return sha256.Sum256(kubeconfig) }
