package clusteraccess

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Keys a kubeconfig Secret may hold the kubeconfig under: Cluster API's "value", or the common
// "kubeconfig".
var kubeconfigKeys = []string{"value", "kubeconfig"}

// ErrKubeconfigInvalid marks a kubeconfig that cannot be used. Its message names the field that
// is wrong and never contains the kubeconfig's content (names, paths, addresses, credentials).
var ErrKubeconfigInvalid = errors.New("kubeconfig invalid")

// KubeconfigPolicy is what the operator allows in kubeconfigs beyond inline data over TLS.
type KubeconfigPolicy struct {
	// AllowInsecure accepts plain http:// servers and insecure-skip-tls-verify (lab seeds only:
	// anyone on the path can read and change the traffic, credentials included).
	AllowInsecure bool
}

// KubeconfigFromSecret returns the kubeconfig bytes of a kubeconfig Secret.
func KubeconfigFromSecret(s *corev1.Secret) ([]byte, error) {
	for _, k := range kubeconfigKeys {
		if b, ok := s.Data[k]; ok && len(b) > 0 {
			return b, nil
		}
	}
	return nil, fmt.Errorf("%w: the Secret has no non-empty key %q or %q", ErrKubeconfigInvalid, kubeconfigKeys[0], kubeconfigKeys[1])
}

// RESTConfig turns a user cluster's kubeconfig into a client config for long-lived caches.
//
// A kubeconfig is data handed to the seed by whoever can write a Secret. It may carry only inline
// data: a file reference (tokenFile, client-certificate, client-key, certificate-authority) would
// make the controller send its own files, such as its service-account token, to a server the
// Secret's author chose; an exec or auth-provider plugin would make it run a program; a proxy-url
// would route it through the author's proxy. Those are refused, as are plain http:// servers and
// insecure-skip-tls-verify unless policy allows them. The rest.Config is built from the checked
// fields only, so nothing the checks did not see reaches the client.
func RESTConfig(kubeconfig []byte, policy KubeconfigPolicy) (*rest.Config, error) {
	raw, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("%w: not a parseable kubeconfig", ErrKubeconfigInvalid)
	}
	ctx, ok := raw.Contexts[raw.CurrentContext]
	if !ok || ctx == nil {
		return nil, fmt.Errorf("%w: current-context names no context in the file", ErrKubeconfigInvalid)
	}
	cluster, ok := raw.Clusters[ctx.Cluster]
	if !ok || cluster == nil {
		return nil, fmt.Errorf("%w: the current context's cluster is not in the file", ErrKubeconfigInvalid)
	}
	user := raw.AuthInfos[ctx.AuthInfo]
	if user == nil {
		user = &clientcmdapi.AuthInfo{}
	}
	if err := checkCluster(cluster, policy); err != nil {
		return nil, err
	}
	if err := checkUser(user); err != nil {
		return nil, err
	}
	cfg := &rest.Config{
		Host: cluster.Server,
		TLSClientConfig: rest.TLSClientConfig{
			Insecure:   cluster.InsecureSkipTLSVerify,
			ServerName: cluster.TLSServerName,
			CAData:     cluster.CertificateAuthorityData,
			CertData:   user.ClientCertificateData,
			KeyData:    user.ClientKeyData,
		},
		BearerToken:        user.Token,
		Username:           user.Username,
		Password:           user.Password,
		DisableCompression: cluster.DisableCompression,
		Impersonate: rest.ImpersonationConfig{
			UserName: user.Impersonate, UID: user.ImpersonateUID, Groups: user.ImpersonateGroups, Extra: user.ImpersonateUserExtra,
		},
		// Nothing a user-cluster endpoint says reaches the controller's log: a server's Warning
		// headers are its own text.
		WarningHandler: rest.NoWarnings{},
		// Bounded connection set-up so that a dead cluster fails fast. No overall request
		// timeout here: it would also cut the long-running watches the caches depend on (the
		// writer and the probe set their own).
		Dial: (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		// Enough for a first allocation of thousands of Ingresses; the user cluster's API
		// priority and fairness still protects it.
		QPS: 1000, Burst: 2000,
		UserAgent: "shardgate-seed-controller",
	}
	if cfg.Insecure {
		cfg.CAData = nil // client-go refuses a CA together with insecure
	}
	return cfg, nil
}

// checkCluster refuses file references, proxies and, unless allowed, unencrypted or unverified
// connections. Messages name the field, never its value.
func checkCluster(c *clientcmdapi.Cluster, policy KubeconfigPolicy) error {
	switch {
	case c.CertificateAuthority != "":
		return fileRef("cluster.certificate-authority", "certificate-authority-data")
	case c.ProxyURL != "":
		return fmt.Errorf("%w: cluster.proxy-url is refused: Shardgate connects to user clusters directly", ErrKubeconfigInvalid)
	case c.Server == "":
		return fmt.Errorf("%w: cluster.server is empty", ErrKubeconfigInvalid)
	}
	u, err := url.Parse(c.Server)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%w: cluster.server is not a URL with a host", ErrKubeconfigInvalid)
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !policy.AllowInsecure {
			return fmt.Errorf("%w: cluster.server uses plain http; use https (or start the controller with --allow-insecure-kubeconfigs)", ErrKubeconfigInvalid)
		}
	default:
		return fmt.Errorf("%w: cluster.server must be an https:// URL", ErrKubeconfigInvalid)
	}
	if c.InsecureSkipTLSVerify && !policy.AllowInsecure {
		return fmt.Errorf("%w: cluster.insecure-skip-tls-verify is refused; give certificate-authority-data (or start the controller with --allow-insecure-kubeconfigs)", ErrKubeconfigInvalid)
	}
	return nil
}

// checkUser refuses file references and plugins.
func checkUser(u *clientcmdapi.AuthInfo) error {
	switch {
	case u.TokenFile != "":
		return fileRef("user.tokenFile", "token")
	case u.ClientCertificate != "":
		return fileRef("user.client-certificate", "client-certificate-data")
	case u.ClientKey != "":
		return fileRef("user.client-key", "client-key-data")
	case u.Exec != nil:
		return fmt.Errorf("%w: user.exec is refused: Shardgate does not run programs named by a kubeconfig", ErrKubeconfigInvalid)
	case u.AuthProvider != nil:
		return fmt.Errorf("%w: user.auth-provider is refused: Shardgate does not run auth plugins named by a kubeconfig", ErrKubeconfigInvalid)
	}
	return nil
}

func fileRef(field, inline string) error {
	return fmt.Errorf("%w: %s is a file reference, which is refused: a kubeconfig in a Secret must carry its data inline (%s)", ErrKubeconfigInvalid, field, inline)
}

// fingerprint identifies a kubeconfig's content without keeping it.
func fingerprint(kubeconfig []byte) [32]byte { return sha256.Sum256(kubeconfig) }
