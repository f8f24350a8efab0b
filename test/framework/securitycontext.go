package framework

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// runtimeDefaultCaps are the capabilities containerd gives a container unless its security
// context drops them (containerd's CRI default set).
var runtimeDefaultCaps = []string{
	"CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "MKNOD", "NET_RAW", "SETGID", "SETUID",
	"SETFCAP", "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "KILL", "AUDIT_WRITE",
}

// Credentials are what a container process runs with on a real kubelet with containerd and runc.
type Credentials struct {
	UID, GID int64
	// Bounding is the capability bounding set. Root also has it as its permitted and effective
	// sets; a non-root process has no capabilities at all (Kubernetes sets no ambient ones, so
	// an added capability lands only in the bounding set).
	Bounding []string
	// NoNewPrivs: allowPrivilegeEscalation is false.
	NoNewPrivs bool
}

// ContainerCredentials works out the credentials of container c of pod as containerd does: the
// container's runAsUser/runAsGroup, else the pod's, else the image's (root for the images the
// harness runs); the runtime's default capabilities with the container's drops and adds;
// no_new_privs from allowPrivilegeEscalation: false.
func ContainerCredentials(pod corev1.PodSpec, c corev1.Container) (Credentials, error) {
	var cr Credentials
	psc := pod.SecurityContext
	sc := c.SecurityContext
	if psc != nil && psc.RunAsUser != nil {
		cr.UID = *psc.RunAsUser
	}
	if psc != nil && psc.RunAsGroup != nil {
		cr.GID = *psc.RunAsGroup
	}
	if sc != nil && sc.RunAsUser != nil {
		cr.UID = *sc.RunAsUser
	}
	if sc != nil && sc.RunAsGroup != nil {
		cr.GID = *sc.RunAsGroup
	}
	nonRoot := (psc != nil && psc.RunAsNonRoot != nil && *psc.RunAsNonRoot) || (sc != nil && sc.RunAsNonRoot != nil && *sc.RunAsNonRoot)
	if sc != nil && sc.RunAsNonRoot != nil && !*sc.RunAsNonRoot {
		nonRoot = false
	}
	if nonRoot && cr.UID == 0 {
		return cr, fmt.Errorf("container %s: runAsNonRoot with uid 0: the kubelet refuses to start it", c.Name)
	}
	caps := slices.Clone(runtimeDefaultCaps)
	if sc != nil && sc.Capabilities != nil {
		for _, d := range sc.Capabilities.Drop {
			if strings.EqualFold(string(d), "ALL") {
				caps = nil
				break
			}
			caps = slices.DeleteFunc(caps, func(x string) bool { return x == strings.TrimPrefix(strings.ToUpper(string(d)), "CAP_") })
		}
		for _, a := range sc.Capabilities.Add {
			if n := strings.TrimPrefix(strings.ToUpper(string(a)), "CAP_"); !slices.Contains(caps, n) {
				caps = append(caps, n)
			}
		}
	}
	slices.Sort(caps)
	cr.Bounding = caps
	cr.NoNewPrivs = sc != nil && sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation
	return cr, nil
}

// SetprivArgs are the setpriv(1) arguments that start a program with these credentials from a
// root parent: user and group, no supplementary groups, no inheritable or ambient capabilities,
// the bounding set, and no_new_privs. The kernel then does the rest as for a real container:
// root keeps its bounding set, a non-root user ends up with no capabilities.
func SetprivArgs(cr Credentials) []string {
	bounding := "-all"
	for _, c := range cr.Bounding {
		bounding += ",+" + strings.ToLower(c)
	}
	args := []string{fmt.Sprintf("--reuid=%d", cr.UID), fmt.Sprintf("--regid=%d", cr.GID), "--clear-groups",
		"--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=" + bounding}
	if cr.NoNewPrivs {
		args = append(args, "--no-new-privs")
	}
	return append(args, "--")
}

// setpriv is the path of setpriv(1) (util-linux, on every Debian).
func setpriv() (string, error) {
	p, err := exec.LookPath("setpriv")
	if err != nil {
		return "", fmt.Errorf("setpriv (util-linux) is needed to run routers with their pod's security context: %w", err)
	}
	return p, nil
}
