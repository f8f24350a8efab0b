package main

import (
	"crypto/tls"
	"fmt"
	"net"
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/shardgate/shardgate/pkg/admission"
)

// validateAdmission: the webhook needs all three flags or none (a half-configured webhook would
// serve a certificate no one trusts, or trust one no one serves).
func validateAdmission(o options) error {
	if o.admissionAddr == "" {
		return nil
	}
	if _, err := admissionPort(o.admissionAddr); err != nil {
		return err
	}
	if o.admissionConfiguration == "" || len(o.admissionHosts) == 0 {
		return fmt.Errorf("--admission-webhook-bind-address needs --admission-webhook-configuration " +
			"and --admission-webhook-hosts")
	}
	for _, h := range o.admissionHosts {
		if net.ParseIP(h) == nil && len(validation.IsDNS1123Subdomain(h)) > 0 {
			return fmt.Errorf("--admission-webhook-hosts: %q is neither a DNS name nor an IP address", h)
		}
	}
	return nil
}

func admissionPort(addr string) (int, error) {
	_, p, err := net.SplitHostPort(addr)
	port, perr := strconv.Atoi(p)
	if err != nil || perr != nil || port < 1 || port > 65535 {
		// Port 0 would be controller-runtime's default, 9443, not a port of the kernel's choosing.
		return 0, fmt.Errorf("--admission-webhook-bind-address: %q is not host:port with a port from 1 to 65535", addr)
	}
	return port, nil
}

// admissionKeeper is the webhook's certificate keeper (nil when the webhook is off), with a
// client of its own: the manager's cache holds no webhook configuration, and with --sharding its
// client's writes need a fence no admission request holds.
func admissionKeeper(cfg *rest.Config, o options) (*admission.Keeper, error) {
	if o.admissionAddr == "" {
		return nil, nil
	}
	c, err := client.New(cfg, client.Options{Scheme: newScheme(nil)})
	if err != nil {
		return nil, err
	}
	return &admission.Keeper{Client: c, Configuration: o.admissionConfiguration,
		Hosts: o.admissionHosts, Log: ctrl.Log.WithName("admission")}, nil
}

// admissionServer is the manager's webhook server, serving the keeper's certificate.
func admissionServer(o options, k *admission.Keeper) webhook.Server {
	host, _, _ := net.SplitHostPort(o.admissionAddr)
	port, _ := admissionPort(o.admissionAddr) // validated
	return webhook.NewServer(webhook.Options{Host: host, Port: port, TLSOpts: []func(*tls.Config){func(c *tls.Config) {
		c.GetCertificate = k.GetCertificate
		c.MinVersion = tls.VersionTLS12
		// HTTP/1.1 only: HTTP/2's stream resets (CVE-2023-44487) cost a server more than a
		// client, and the API server's admission calls do not need it.
		c.NextProtos = []string{"http/1.1"}
	}}})
}

// addAdmission registers the keeper and the IngressProfile handler on the manager.
func addAdmission(mgr ctrl.Manager, o options, k *admission.Keeper) error {
	if k == nil {
		return nil
	}
	if err := mgr.Add(k); err != nil {
		return err
	}
	mgr.GetWebhookServer().Register(admission.ProfilePath, admission.Handler(o.dnsZone))
	return nil
}
