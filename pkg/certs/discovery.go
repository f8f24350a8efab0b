package certs

import (
	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"github.com/go-logr/logr"
	"k8s.io/client-go/discovery"

	"github.com/shardgate/shardgate/pkg/apidiscovery"
)

// NewCertManagerAPI discovers cert-manager's Certificates in the seed: until they are served,
// clusters whose profile turns TLS on say CertManagerNotInstalled.
func NewCertManagerAPI(dc discovery.DiscoveryInterface, log logr.Logger) *apidiscovery.API {
	return &apidiscovery.API{GroupVersion: cmapi.SchemeGroupVersion.String(), Kind: cmapi.CertificateKind, Name: "cert-manager",
		Meanwhile: "clusters whose profile sets tls.issuerRef get no certificate until it is", Discovery: dc, Log: log}
}
