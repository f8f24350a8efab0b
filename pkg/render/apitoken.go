package render

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// A container that calls the Kubernetes API finds its credentials where the kubelet puts an
// automounted token, laid out the same way (token, ca.crt, namespace), so in-cluster clients
// (Traefik's, client-go's rest.InClusterConfig) read them unchanged.
const (
	apiTokenVolume    = "kube-api-access"
	apiTokenMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	// An hour, not the automounted 3607 s: the API server extends tokens of exactly 3607 s to a
	// year (--service-account-extend-token-expiration, on by default), so a token copied out of
	// a router would stay valid for a year while its pod lives. The kubelet renews the file at
	// 80% of its life; client-go (Traefik's too) re-reads it.
	apiTokenSeconds = 3600
)

// withAPIToken turns automounting off for the pod and mounts the pod's ServiceAccount token into
// the named containers only. Router pods hold the router's token, which reads Secrets; a
// container that does not call the API, or one added later, must not hold it (security item 23).
func withAPIToken(pod *corev1.PodSpec, containers ...string) {
	pod.AutomountServiceAccountToken = ptr.To(false)
	pod.Volumes = append(pod.Volumes, corev1.Volume{Name: apiTokenVolume, VolumeSource: apiTokenVolumeSource()})
	for i, c := range pod.Containers {
		if slices.Contains(containers, c.Name) {
			pod.Containers[i].VolumeMounts = append(c.VolumeMounts,
				corev1.VolumeMount{Name: apiTokenVolume, MountPath: apiTokenMountPath, ReadOnly: true})
		}
	}
}

// apiTokenVolumeSource is the volume the kubelet would automount, but with a token that expires
// in an hour: a bound token of the pod's ServiceAccount, the cluster's CA certificate (the
// kube-root-ca.crt ConfigMap every namespace gets) and the pod's namespace. Every field the API
// server would default is set, so the applied spec reads back as rendered.
func apiTokenVolumeSource() corev1.VolumeSource {
	return corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](0o644),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token",
				ExpirationSeconds: ptr.To[int64](apiTokenSeconds)}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
	}}
}
