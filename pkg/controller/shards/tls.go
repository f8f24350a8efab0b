package shards

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/certs"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/render"
)

// tlsInput is what the routers get for TLS: nothing while the profile's TLS is off; otherwise
// the seed's issued key pair when it is usable now, else the key pair the routers already have.
// A key pair is never replaced by one that is expired, not yet valid, or does not parse, and is
// never removed while TLS is on: an issuer that fails leaves the last good certificate serving.
// A key pair valid for anything beyond the names the cluster's Certificate asks for
// (status.certificate.dnsNames) never reaches the user cluster: its owner would hold a key for
// names that are not the cluster's.
func (r *Reconciler) tlsInput(ctx context.Context, ci *v1alpha1.ClusterIngress, cluster clusteraccess.Cluster, now time.Time) (*render.TLSInput, error) {
	if !ci.Spec.TLS.On() {
		return nil, nil
	}
	in := &render.TLSInput{RedirectHTTP: ci.Spec.TLS.RedirectHTTP}
	current := &corev1.Secret{}
	err := cluster.Reader().Get(ctx, client.ObjectKey{Namespace: names.Namespace, Name: names.TLSSecretName}, current)
	switch {
	case apierrors.IsNotFound(err):
		current = nil
	case err != nil:
		return nil, clusteraccess.DescribeError("read the routers' certificate", err)
	}
	if current != nil {
		in.Cert, in.Key, in.CA = current.Data[corev1.TLSCertKey], current.Data[corev1.TLSPrivateKeyKey], current.Data["ca.crt"]
	}
	// The routers already have the certificate the status reports: no need to read the seed.
	if st := ci.Status.Certificate; current != nil && st != nil && st.SerialNumber != "" {
		if kp, err := certs.ParseKeyPair(current.Data); err == nil && kp.Serial() == st.SerialNumber {
			return in, nil
		}
	}
	if r.SecretReader == nil || r.CertificateNamespace == "" || ci.Status.Certificate == nil {
		return in, nil
	}
	issued := &corev1.Secret{}
	err = r.SecretReader.Get(ctx, client.ObjectKey{Namespace: r.CertificateNamespace, Name: certs.CertificateName(client.ObjectKeyFromObject(ci))}, issued)
	if apierrors.IsNotFound(err) {
		return in, nil
	}
	if err != nil {
		return nil, err
	}
	if kp, err := certs.ParseKeyPair(issued.Data); err == nil && kp.ValidAt(now) && len(kp.Beyond(ci.Status.Certificate.DNSNames)) == 0 {
		in.Cert, in.Key, in.CA = kp.Cert, kp.Key, kp.CA
	}
	return in, nil
}
