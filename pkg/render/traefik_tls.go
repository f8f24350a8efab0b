package render

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/pkg/names"
)

// TraefikTLSConfigName is the ConfigMap with Traefik routers' TLS configuration (in names.Namespace).
const TraefikTLSConfigName = "shardgate-tls-config"

// Where Traefik routers find their TLS configuration and key pair: one projected volume, so
// kubelet swaps the configuration and the key pair together and Traefik's file watch sees one
// change.
const (
	tlsMountPath  = "/etc/shardgate/tls"
	tlsConfigFile = "dynamic.yaml"
	tlsVolume     = "tls"
)

// TLSObjects implements Flavour: Traefik's dynamic configuration, a default TLS store whose
// default certificate is the mounted key pair (once there is one).
func (Traefik) TLSObjects(in *TLSInput) []Object {
	config := "# Shardgate: no certificate issued yet; routers serve their own default.\ntls: {}\n"
	if len(in.Cert) > 0 {
		config = fmt.Sprintf(`# Shardgate: the cluster's certificate is every router's default.
tls:
  stores:
    default:
      defaultCertificate:
        certFile: %[1]s/%[2]s
        keyFile: %[1]s/%[3]s
`, tlsMountPath, corev1.TLSCertKey, corev1.TLSPrivateKeyKey)
	}
	cm := &corev1.ConfigMap{ObjectMeta: objectMeta(TraefikTLSConfigName, names.Namespace, nil),
		Data: map[string]string{tlsConfigFile: config}}
	return []Object{{corev1.SchemeGroupVersion.WithKind("ConfigMap"), cm}}
}

// traefikTLSArgs turn on TLS for every route on the websecure entry point with the default
// store, read from the mounted configuration and reloaded when kubelet updates it.
//
// The file provider watches the mount's directory, not the configuration file: kubelet updates a
// projected volume by writing the new files into a new hidden directory and switching the
// `..data` symlink to it. Traefik's watch of one file (which follows the symlink into the hidden
// directory) fires when that directory is removed at the first update and is gone after it; from
// then on only kubelet's fsGroup pass, which comes before the switch, woke it, so a renewal
// reached the routers only when Traefik happened to read after the switch. In directory mode
// the `..data` switch itself, and the old directory's removal, wake it at every update. Traefik
// also reads kubelet's hidden copy of the configuration (it descends into subdirectories), which
// is the same file: it logs that the store is "already configured, skipping" at each reload, and
// that is all.
func traefikTLSArgs(in *TLSInput) []string {
	args := []string{
		"--entryPoints.websecure.http.tls=true",
		"--providers.file.directory=" + tlsMountPath,
		"--providers.file.watch=true",
	}
	if in.RedirectHTTP {
		// To port 443 whatever the container port: clients reach every router on 443 (the host
		// port, or the Service port).
		args = append(args,
			"--entryPoints.web.http.redirections.entryPoint.to=:443",
			"--entryPoints.web.http.redirections.entryPoint.scheme=https",
			"--entryPoints.web.http.redirections.entryPoint.permanent=true")
	}
	return args
}

// tlsVolumeSource projects the configuration and the key pair into one directory. The Secret
// is optional: before the first issuance there is none, and the configuration does not name it.
// Files are 0440 with the pod's fsGroup: readable by the router's user, whether root (owner)
// or 65532 (group), and by no one else.
func tlsVolumeSource() corev1.VolumeSource {
	return corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](0o440),
		Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: TraefikTLSConfigName},
				Items:                []corev1.KeyToPath{{Key: tlsConfigFile, Path: tlsConfigFile}}}},
			{Secret: &corev1.SecretProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: names.TLSSecretName}, Optional: ptr.To(true),
				Items: []corev1.KeyToPath{{Key: corev1.TLSCertKey, Path: corev1.TLSCertKey},
					{Key: corev1.TLSPrivateKeyKey, Path: corev1.TLSPrivateKeyKey}}}},
		},
	}}
}
