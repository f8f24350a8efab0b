package usercluster

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
	cfg, err := RESTConfig(kubeconfig(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://127.0.0.1:6443" || cfg.BearerToken != "s3cr3t-token" || cfg.Timeout != 0 || cfg.Dial == nil {
		t.Fatalf("unexpected config: host %q timeout %v dial %v", cfg.Host, cfg.Timeout, cfg.Dial != nil)
	}
	bad := map[string][]byte{
		"garbage":     []byte("s3cr3t-token: {{ not yaml"),
		"empty":       {},
		"no context":  kubeconfig(t, func(c *clientcmdapi.Config) { c.CurrentContext = "missing" }),
		"exec plugin": kubeconfig(t, func(c *clientcmdapi.Config) { c.AuthInfos["u"].Exec = &clientcmdapi.ExecConfig{Command: "/bin/sh"} }),
		"auth plugin": kubeconfig(t, func(c *clientcmdapi.Config) {
			c.AuthInfos["u"].AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "gcp"}
		}),
		"no server": kubeconfig(t, func(c *clientcmdapi.Config) { c.Clusters["c"].Server = "" }),
	}
	for name, kc := range bad {
		t.Run(name, func(t *testing.T) {
			_, err := RESTConfig(kc)
			if !errors.Is(err, ErrKubeconfigInvalid) {
				t.Fatalf("want ErrKubeconfigInvalid, got %v", err)
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Fatalf("error leaks the kubeconfig's content: %v", err)
			}
		})
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
