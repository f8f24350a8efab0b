package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TLSSettings give every selected cluster HTTPS: one cert-manager Certificate per cluster covers
// the cluster domain, its wildcard and every shard's wildcard, and every router serves it as
// its default certificate.
type TLSSettings struct {
	// issuerRef is the cert-manager issuer that signs the clusters' certificates. The
	// Certificates live in Shardgate's certificate namespace (the controller's
	// --certificate-namespace), and an Issuer must live there too: no one else's Certificates can
	// use it. A ClusterIssuer serves every namespace of the seed, tenants' included. Wildcard
	// names need an ACME issuer with a DNS-01 solver (or a CA issuer).
	// +optional
	IssuerRef *IssuerReference `json:"issuerRef,omitempty"`

	// enabled turns HTTPS on or off; unset means on whenever issuerRef is set.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// duration requested for each certificate (cert-manager's spec.duration; ACME servers may
	// choose their own). At least 1h.
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`

	// renewBefore: how long before expiry a certificate is renewed (cert-manager's default: a
	// third of its lifetime). At least 5m and less than duration.
	// +optional
	RenewBefore *metav1.Duration `json:"renewBefore,omitempty"`

	// redirectHTTP answers plain HTTP with a permanent redirect to HTTPS on every router.
	// +optional
	RedirectHTTP bool `json:"redirectHTTP,omitempty"`
}

// IssuerKind is the kind of a cert-manager issuer.
// +kubebuilder:validation:Enum=Issuer;ClusterIssuer
type IssuerKind string

// Issuer kinds.
const (
	KindIssuer        IssuerKind = "Issuer"
	KindClusterIssuer IssuerKind = "ClusterIssuer"
)

// IssuerReference names a cert-manager issuer.
type IssuerReference struct {
	// name of the Issuer or ClusterIssuer.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// kind: Issuer (default) or ClusterIssuer.
	// +optional
	// +kubebuilder:default=Issuer
	Kind IssuerKind `json:"kind,omitempty"`
	// group of the issuer: cert-manager.io (default) or an external issuer's group.
	// +optional
	// +kubebuilder:default=cert-manager.io
	// +kubebuilder:validation:MaxLength=253
	Group string `json:"group,omitempty"`
}

// CertManagerGroup is cert-manager's API group, the default issuer group.
const CertManagerGroup = "cert-manager.io"

// On reports whether HTTPS is wanted: an issuer is set and enabled is not false.
func (t TLSSettings) On() bool {
	return t.IssuerRef != nil && (t.Enabled == nil || *t.Enabled)
}

// ResolveTLS returns TLS settings with defaults filled in.
func ResolveTLS(t TLSSettings) TLSSettings {
	t = *t.DeepCopy()
	if t.IssuerRef != nil {
		if t.IssuerRef.Kind == "" {
			t.IssuerRef.Kind = KindIssuer
		}
		if t.IssuerRef.Group == "" {
			t.IssuerRef.Group = CertManagerGroup
		}
	}
	return t
}

// CertificateStatus is what the cluster's certificate holds, read from the issued Secret.
type CertificateStatus struct {
	// name of the cert-manager Certificate (and of its Secret) in Shardgate's certificate
	// namespace.
	Name string `json:"name"`
	// dnsNames the Certificate asks for: the cluster's names, at most 100, as far as the seed's
	// ACME budget granted them (a queued change shows the names still in force). The issued
	// certificate must name exactly these.
	// +optional
	DNSNames []string `json:"dnsNames,omitempty"`
	// serialNumber of the issued certificate (hex), empty before the first issuance.
	// +optional
	SerialNumber string `json:"serialNumber,omitempty"`
	// notBefore of the issued certificate.
	// +optional
	NotBefore *metav1.Time `json:"notBefore,omitempty"`
	// notAfter of the issued certificate: routers serve it until then unless a renewal replaces
	// it first.
	// +optional
	NotAfter *metav1.Time `json:"notAfter,omitempty"`
	// renewalTime cert-manager scheduled.
	// +optional
	RenewalTime *metav1.Time `json:"renewalTime,omitempty"`
}
