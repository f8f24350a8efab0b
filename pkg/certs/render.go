package certs

import (
	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// Certificate is the cert-manager Certificate for a ClusterIngress whose TLS is on, owned by it
// (so it goes when the cluster does) in its namespace. ECDSA P-256 keys, a new key on every
// renewal: a key that leaked once does not stay useful.
func Certificate(ci *v1alpha1.ClusterIngress, dnsNames []string) *cmapi.Certificate {
	tls := ci.Spec.TLS
	name := CertificateName(ci.Name)
	labels := map[string]string{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue}
	c := &cmapi.Certificate{
		TypeMeta: metav1.TypeMeta{APIVersion: cmapi.SchemeGroupVersion.String(), Kind: cmapi.CertificateKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ci.Namespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: "ClusterIngress", Name: ci.Name, UID: ci.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}}},
		Spec: cmapi.CertificateSpec{
			SecretName:     name,
			SecretTemplate: &cmapi.CertificateSecretTemplate{Labels: labels},
			DNSNames:       dnsNames,
			IssuerRef:      cmmeta.IssuerReference{Name: tls.IssuerRef.Name, Kind: string(tls.IssuerRef.Kind), Group: tls.IssuerRef.Group},
			Duration:       tls.Duration,
			RenewBefore:    tls.RenewBefore,
			PrivateKey: &cmapi.CertificatePrivateKey{
				Algorithm: cmapi.ECDSAKeyAlgorithm, Size: 256, RotationPolicy: cmapi.RotationPolicyAlways,
			},
		},
	}
	return c
}
