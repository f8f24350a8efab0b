package framework

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MetricsReaderRole is the file of the ClusterRole a scraper needs; the chart ships its rules.
const MetricsReaderRole = "config/rbac/metrics_reader_role.yaml"

// metricsScraper is the seed ServiceAccount the harness scrapes as, as Prometheus does with its own.
const metricsScraper = "shardgate-metrics-scraper"

// metricsTokenTTL: the scraper's token is reused this long (the controller answers it from its
// cached review), well within the hour it is valid.
const metricsTokenTTL = 30 * time.Minute

// MetricsReaderToken returns a token of a seed ServiceAccount bound to the metrics-reader
// ClusterRole, creating the role (unless the chart did: then its own is bound), the account and
// the binding, as an operator does for Prometheus.
func MetricsReaderToken(cp *ControlPlane) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	roles, err := ReadClusterRoles(MetricsReaderRole)
	if err != nil {
		return "", err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: metricsScraper}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: metricsScraper},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: roles[0].Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "default", Name: metricsScraper}}}
	for _, obj := range []client.Object{roles[0], sa, binding} {
		if err := cp.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("metrics reader: %w", err)
		}
	}
	return ServiceAccountToken(cp, "default", metricsScraper)
}

// writeMetricsCert gives the controller a serving certificate for 127.0.0.1 from a CA of its own
// (--metrics-cert-dir), so that scrapes verify the server as a careful Prometheus does; it
// returns the CA's pool.
func writeMetricsCert(dir string) (*x509.CertPool, error) {
	ca, err := newTestCA("shardgate-metrics-ca")
	if err != nil {
		return nil, err
	}
	certPEM, keyPEM, err := ca.serving("seed-controller-metrics", []string{"localhost"}, "127.0.0.1")
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), certPEM, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), keyPEM, 0o600); err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.pem)
	return pool, nil
}

// Metrics returns the controller's Prometheus text exposition, scraped as Prometheus does: over
// HTTPS, with the token of a ServiceAccount bound to the metrics-reader ClusterRole.
func (c *Controller) Metrics() (string, error) {
	token, err := c.scraperToken()
	if err != nil {
		return "", err
	}
	code, body, err := c.ScrapeMetrics(token)
	if err != nil {
		return "", err
	}
	if code != http.StatusOK {
		return "", fmt.Errorf("GET /metrics: %d %.300s", code, body)
	}
	return body, nil
}

// ScrapeMetrics GETs /metrics over HTTPS (trusting only the certificate the harness gave the
// controller) with token as the bearer token ("": none); the status code and body.
func (c *Controller) ScrapeMetrics(token string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, "https://"+c.MetricsAddr+"/metrics", nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: c.metricsCA, MinVersion: tls.VersionTLS12}}}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// scraperToken mints the scraper's token on first use (after a chart install, so the chart's
// role is the one bound) and reuses it for metricsTokenTTL.
func (c *Controller) scraperToken() (string, error) {
	c.tokenMu.Lock()
	defer c.tokenMu.Unlock()
	if c.token != "" && time.Now().Before(c.tokenUntil) {
		return c.token, nil
	}
	token, err := MetricsReaderToken(c.seed)
	if err != nil {
		return "", err
	}
	c.token, c.tokenUntil = token, time.Now().Add(metricsTokenTTL)
	return token, nil
}
