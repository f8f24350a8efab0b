package certs

import (
	"strings"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// Annotations on the Certificates in Shardgate's namespace (where only the operator and
// Shardgate write).
const (
	// ClusterIngressAnnotation names the ClusterIngress (namespace/name) a Certificate is for:
	// a ClusterIngress in another namespace cannot own it.
	ClusterIngressAnnotation = "shardgate.io/cluster-ingress"
	// NamesAnnotation lists the names (comma-separated) the ACME budget granted the cluster; the
	// Certificate's spec is repaired to ask for exactly these.
	NamesAnnotation = "shardgate.io/dns-names"
)

// Certificate is the cert-manager Certificate for a ClusterIngress whose TLS is on, in Shardgate's
// certificate namespace, asking for the names it was granted. ECDSA P-256 keys, a new key on every
// renewal: a key that leaked once does not stay useful. Its spec is Shardgate's alone: the
// certificates controller puts back any difference.
func Certificate(ci *v1alpha1.ClusterIngress, namespace string, dnsNames []string) *cmapi.Certificate {
	tls := ci.Spec.TLS
	key := client.ObjectKeyFromObject(ci)
	name := CertificateName(key)
	labels := map[string]string{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue}
	return &cmapi.Certificate{
		TypeMeta: metav1.TypeMeta{APIVersion: cmapi.SchemeGroupVersion.String(), Kind: cmapi.CertificateKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels, Annotations: map[string]string{
			ClusterIngressAnnotation: key.String(), NamesAnnotation: strings.Join(dnsNames, ","),
		}},
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
}

// Owner is the ClusterIngress a Certificate in Shardgate's namespace is for (ok false: not one of
// Shardgate's).
func Owner(c *cmapi.Certificate) (types.NamespacedName, bool) {
	if c.Labels[v1alpha1.ManagedByLabel] != v1alpha1.ManagedByValue {
		return types.NamespacedName{}, false
	}
	ns, name, ok := strings.Cut(c.Annotations[ClusterIngressAnnotation], "/")
	if !ok || ns == "" || name == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}

// Granted are the names the Certificate was granted (nil: none yet, or not Shardgate's).
func Granted(c *cmapi.Certificate) []string {
	if c == nil || c.Annotations[NamesAnnotation] == "" {
		return nil
	}
	return strings.Split(c.Annotations[NamesAnnotation], ",")
}

// Drifted reports whether the live Certificate differs from the desired one in anything Shardgate
// decides: its whole spec, its labels and annotations. A name, an issuer or a secret added by
// hand is put back, not kept beside Shardgate's.
func Drifted(live, desired *cmapi.Certificate) bool {
	for k, v := range desired.Labels {
		if live.Labels[k] != v {
			return true
		}
	}
	for k, v := range desired.Annotations {
		if live.Annotations[k] != v {
			return true
		}
	}
	return !equality.Semantic.DeepEqual(live.Spec, desired.Spec)
}
