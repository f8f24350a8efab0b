package framework

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestContainerCredentials(t *testing.T) {
	nonRootBind := &corev1.SecurityContext{RunAsUser: ptr.To[int64](65532), RunAsNonRoot: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_BIND_SERVICE"}}}
	cr, err := ContainerCredentials(corev1.PodSpec{}, corev1.Container{SecurityContext: nonRootBind})
	if err != nil || cr.UID != 65532 || !cr.NoNewPrivs || !slices.Equal(cr.Bounding, []string{"NET_BIND_SERVICE"}) {
		t.Fatalf("%+v %v", cr, err)
	}
	want := []string{"--reuid=65532", "--regid=0", "--clear-groups", "--inh-caps=-all", "--ambient-caps=-all",
		"--bounding-set=-all,+net_bind_service", "--no-new-privs", "--"}
	if got := SetprivArgs(cr); !slices.Equal(got, want) {
		t.Fatalf("setpriv args %v, want %v", got, want)
	}
	// No security context: root with the runtime's default capabilities.
	cr, _ = ContainerCredentials(corev1.PodSpec{}, corev1.Container{})
	if cr.UID != 0 || cr.NoNewPrivs || len(cr.Bounding) != len(runtimeDefaultCaps) {
		t.Fatalf("defaults: %+v", cr)
	}
	// The pod's user applies unless the container sets its own; a dropped default goes.
	cr, _ = ContainerCredentials(corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](7), RunAsGroup: ptr.To[int64](8)}},
		corev1.Container{SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"NET_RAW"}}}})
	if cr.UID != 7 || cr.GID != 8 || slices.Contains(cr.Bounding, "NET_RAW") || !slices.Contains(cr.Bounding, "CHOWN") {
		t.Fatalf("pod user: %+v", cr)
	}
	if _, err := ContainerCredentials(corev1.PodSpec{}, corev1.Container{SecurityContext: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true)}}); err == nil {
		t.Fatal("runAsNonRoot with uid 0 accepted")
	}
}
