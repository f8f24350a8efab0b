package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/shardgate/shardgate/pkg/controller/allocation"
	"github.com/shardgate/shardgate/pkg/controller/canary"
	"github.com/shardgate/shardgate/pkg/controller/certificates"
	"github.com/shardgate/shardgate/pkg/controller/dns"
	"github.com/shardgate/shardgate/pkg/controller/load"
	"github.com/shardgate/shardgate/pkg/tokenauth"
)

// metricsPermission is what Kubernetes' own components ask of a scraper, and what the chart's
// ClusterRole shardgate-metrics-reader grants: get on the non-resource URL /metrics. The metrics
// name every user cluster, so they are the seed's business, not anyone's who reaches the port.
var metricsPermission = tokenauth.Permission{
	NonResource: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
	Description: "get the non-resource URL /metrics",
}

// metricsOptions serves /metrics over HTTPS, to bearer tokens the seed's API server authenticates
// and authorizes; plain HTTP to anyone only when the operator asked for it (--metrics-secure=false).
func metricsOptions(o options) metricsserver.Options {
	if !o.metricsSecure {
		return metricsserver.Options{BindAddress: o.metricsAddr}
	}
	return metricsserver.Options{
		BindAddress:   o.metricsAddr,
		SecureServing: true,
		// tls.crt and tls.key, reloaded when they change; empty: a self-signed certificate.
		CertDir:        o.metricsCertDir,
		FilterProvider: metricsFilter,
		// HTTP/1.1 only, as kubebuilder scaffolds it: a scraper needs nothing more, and HTTP/2's
		// stream resets (CVE-2023-44487) would reach the server before any token is checked.
		TLSOpts: []func(*tls.Config){func(c *tls.Config) {
			c.NextProtos = []string{"http/1.1"}
			c.MinVersion = tls.VersionTLS12
		}},
	}
}

// metricsFilter is the status page's token check with the /metrics permission, rather than
// controller-runtime's filters.WithAuthenticationAndAuthorization: that one answers a token that
// does not authenticate with a 500 and an error in the log, and reviews every unknown token
// anyone sends, where this one answers 401 and holds such reviews to a few a second.
func metricsFilter(cfg *rest.Config, hc *http.Client) (metricsserver.Filter, error) {
	cs, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("metrics authorization: %w", err)
	}
	a := &tokenauth.Authorizer{Authn: cs.AuthenticationV1().TokenReviews(), Authz: cs.AuthorizationV1().SubjectAccessReviews(),
		Permission: metricsPermission}
	return func(_ logr.Logger, h http.Handler) (http.Handler, error) { return a.Wrap(h), nil }, nil
}

// validateMetrics: a certificate directory without its files would quietly serve a self-signed
// certificate instead, which the operator's scraper, set to trust the real one, then refuses.
func validateMetrics(o options) error {
	if o.metricsCertDir == "" {
		return nil
	}
	if !o.metricsSecure {
		return fmt.Errorf("--metrics-cert-dir needs --metrics-secure (plain HTTP uses no certificate)")
	}
	for _, f := range []string{"tls.crt", "tls.key"} {
		if _, err := os.Stat(filepath.Join(o.metricsCertDir, f)); err != nil {
			return fmt.Errorf("--metrics-cert-dir: %w", err)
		}
	}
	return nil
}

// registerClusterMetrics registers the clusters' conditions on controller-runtime's registry,
// replacing the collector of an earlier manager of this process (tests build several).
func registerClusterMetrics(c prometheus.Collector) error {
	err := metrics.Registry.Register(c)
	if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
		metrics.Registry.Unregister(are.ExistingCollector)
		err = metrics.Registry.Register(c)
	}
	if err != nil {
		return fmt.Errorf("cluster metrics: %w", err)
	}
	return nil
}

// forgetClusterMetrics drops the samples this replica set for a cluster it gave to another.
func forgetClusterMetrics(key types.NamespacedName) {
	allocation.ForgetCluster(key)
	canary.ForgetCluster(key)
	certificates.ForgetCluster(key)
	dns.ForgetCluster(key)
	load.ForgetCluster(key)
}
