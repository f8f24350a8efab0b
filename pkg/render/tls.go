package render

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/shardgate/shardgate/pkg/names"
)

// TLSInput says the routers serve HTTPS with the cluster's certificate.
type TLSInput struct {
	// RedirectHTTP: plain HTTP answers with a permanent redirect to HTTPS.
	RedirectHTTP bool
	// Cert (PEM chain), Key (PEM) and CA (optional) are the key pair to serve; empty until the
	// first issuance (routers then serve their own self-signed default).
	Cert, Key, CA []byte
}

// TLSObjects are the routers' copy of the key pair (once there is one), which every flavour's
// routers serve, and each flavour's wiring of it as their default certificate.
func TLSObjects(in *TLSInput, flavours ...Flavour) ([]*unstructured.Unstructured, error) {
	var objs []Object
	if len(in.Cert) > 0 {
		data := map[string][]byte{corev1.TLSCertKey: in.Cert, corev1.TLSPrivateKeyKey: in.Key}
		if len(in.CA) > 0 {
			data["ca.crt"] = in.CA
		}
		secret := &corev1.Secret{ObjectMeta: objectMeta(names.TLSSecretName, names.Namespace, managedLabels("")),
			Type: corev1.SecretTypeTLS, Data: data}
		objs = append(objs, Object{corev1.SchemeGroupVersion.WithKind("Secret"), secret})
	}
	for _, f := range flavours {
		for _, o := range f.TLSObjects(in) {
			if err := labelManaged(o); err != nil {
				return nil, err
			}
			objs = append(objs, o)
		}
	}
	return toUnstructured(objs...)
}

// labelManaged labels an object a flavour rendered as Shardgate's: pruning, cleanup and the
// cache find Shardgate's objects by the label, and a flavour cannot forget it.
func labelManaged(o Object) error {
	m, err := meta.Accessor(o.Obj)
	if err != nil {
		return err
	}
	m.SetLabels(managedLabels(""))
	return nil
}
