package clusteraccess

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func kubeconfig(t *testing.T, mutate func(*clientcmdapi.Config)) []byte {
	t.Helper()
	c := clientcmdapi.NewConfig()
	c.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443"}
	c.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "s3cr3t-token"}
	c.Contexts["ctx"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	c.CurrentContext = "ctx"
	if mutate != nil {
		mutate(c)
	}
	b, err := clientcmd.Write(*c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRESTConfig(t *testing.T) {
	cfg, err := RESTConfig(kubeconfig(t, nil), KubeconfigPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://127.0.0.1:6443" || cfg.BearerToken != "s3cr3t-token" || cfg.Timeout != 0 || cfg.Dial == nil || cfg.WarningHandler == nil {
		t.Fatalf("unexpected config: host %q timeout %v dial %v", cfg.Host, cfg.Timeout, cfg.Dial != nil)
	}
	if cfg.BearerTokenFile != "" || cfg.CAFile != "" || cfg.CertFile != "" || cfg.KeyFile != "" || cfg.ExecProvider != nil || cfg.AuthProvider != nil || cfg.Proxy != nil {
		t.Fatalf("the config carries something the checks did not see: %+v", cfg)
	}
}

// TestRESTConfigRefusesWhatIsNotInlineData: a kubeconfig in a Secret is data from whoever wrote
// the Secret. A file reference would make the controller send its own files (its service-account
// token, which can read every Secret of the seed) to a server the Secret's author chose. Each
// refusal names the field and never the value.
func TestRESTConfigRefusesWhatIsNotInlineData(t *testing.T) {
	const saToken = "/var/run/secrets/kubernetes.io/serviceaccount/token"
	bad := map[string]struct {
		kc    []byte
		field string
	}{
		"garbage":     {[]byte("s3cr3t-token: {{ not yaml"), "parseable"},
		"empty":       {[]byte{}, "current-context"},
		"no context":  {kubeconfig(t, func(c *clientcmdapi.Config) { c.CurrentContext = "s3cr3t-missing" }), "current-context"},
		"exec plugin": {kubeconfig(t, func(c *clientcmdapi.Config) { c.AuthInfos["u"].Exec = &clientcmdapi.ExecConfig{Command: "/bin/s3cr3t"} }), "user.exec"},
		"auth plugin": {kubeconfig(t, func(c *clientcmdapi.Config) {
			c.AuthInfos["u"].AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "gcp"}
		}), "user.auth-provider"},
		"no server":          {kubeconfig(t, func(c *clientcmdapi.Config) { c.Clusters["c"].Server = "" }), "cluster.server"},
		"tokenFile":          {kubeconfig(t, func(c *clientcmdapi.Config) { c.AuthInfos["u"].TokenFile = saToken }), "user.tokenFile"},
		"client-certificate": {kubeconfig(t, func(c *clientcmdapi.Config) { c.AuthInfos["u"].ClientCertificate = "/etc/s3cr3t.crt" }), "user.client-certificate"},
		"client-key":         {kubeconfig(t, func(c *clientcmdapi.Config) { c.AuthInfos["u"].ClientKey = "/etc/s3cr3t.key" }), "user.client-key"},
		"certificate-authority": {kubeconfig(t, func(c *clientcmdapi.Config) {
			c.Clusters["c"].CertificateAuthority = "/etc/s3cr3t-ca.crt"
		}), "cluster.certificate-authority"},
		"proxy-url": {kubeconfig(t, func(c *clientcmdapi.Config) { c.Clusters["c"].ProxyURL = "http://s3cr3t-proxy:3128" }), "cluster.proxy-url"},
		"http":      {kubeconfig(t, func(c *clientcmdapi.Config) { c.Clusters["c"].Server = "http://s3cr3t.example:80" }), "plain http"},
		"insecure":  {kubeconfig(t, func(c *clientcmdapi.Config) { c.Clusters["c"].InsecureSkipTLSVerify = true }), "insecure-skip-tls-verify"},
		"unix":      {kubeconfig(t, func(c *clientcmdapi.Config) { c.Clusters["c"].Server = "unix:///var/s3cr3t.sock" }), "cluster.server"},
	}
	for name, tt := range bad {
		t.Run(name, func(t *testing.T) {
			_, err := RESTConfig(tt.kc, KubeconfigPolicy{})
			if !errors.Is(err, ErrKubeconfigInvalid) {
				t.Fatalf("want ErrKubeconfigInvalid, got %v", err)
			}
			if !strings.Contains(err.Error(), tt.field) {
				t.Errorf("error %q does not name %q", err, tt.field)
			}
			if strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), saToken) {
				t.Fatalf("error leaks the kubeconfig's content: %v", err)
			}
		})
	}
	// The operator may allow plain http and unverified TLS (lab seeds), nothing else.
	for _, name := range []string{"http", "insecure"} {
		if _, err := RESTConfig(bad[name].kc, KubeconfigPolicy{AllowInsecure: true}); err != nil {
			t.Errorf("%s with AllowInsecure: %v", name, err)
		}
	}
	if _, err := RESTConfig(bad["tokenFile"].kc, KubeconfigPolicy{AllowInsecure: true}); err == nil {
		t.Error("AllowInsecure must not allow file references")
	}
}

func TestKubeconfigFromSecret(t *testing.T) {
	for _, key := range []string{"value", "kubeconfig"} {
		s := &corev1.Secret{Data: map[string][]byte{key: []byte("x")}}
		if b, err := KubeconfigFromSecret(s); err != nil || string(b) != "x" {
			t.Errorf("key %q: %q, %v", key, b, err)
		}
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Data: map[string][]byte{"other": []byte("x"), "value": {}}}
	if _, err := KubeconfigFromSecret(s); !errors.Is(err, ErrKubeconfigInvalid) {
		t.Errorf("want ErrKubeconfigInvalid, got %v", err)
	}
}
