package framework

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestRealNodes: pods run for real on kubelet + containerd nodes in network namespaces: a
// host-network pod binds a node's port 80, a pod-network pod on another node answers on its pod
// IP from the first node (routes between nodes), and the client namespace reaches both; the
// keepalived image (a Debian binary with its shared libraries) runs.
func TestRealNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real nodes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cp := StartControlPlane(t, "real", ControlPlaneOptions{SimulatedNodes: true, RealNodes: true})
	f := StartFabric(t)
	n1, err := f.AddRealNode(ctx, cp, RealNodeSpec{Name: "n1", Labels: map[string]string{"role": "edge"}})
	if err != nil {
		t.Fatal(err)
	}
	n2, err := f.AddRealNode(ctx, cp, RealNodeSpec{Name: "n2"})
	if err != nil {
		t.Fatal(err)
	}
	pod := func(name, node string, hostNet bool, port string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: corev1.PodSpec{
			NodeName: node, HostNetwork: hostNet, TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{Name: "app", Image: BackendImage, ImagePullPolicy: corev1.PullNever,
				Env:            []corev1.EnvVar{{Name: "NAME", Value: name}, {Name: "PORT", Value: port}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.Parse(port)}}, PeriodSeconds: 1}}}}}
	}
	for _, p := range []*corev1.Pod{pod("host", n1.Name, true, "80"), pod("inpod", n2.Name, false, "8080")} {
		if err := cp.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	ready := func(name string) *corev1.Pod {
		p := &corev1.Pod{}
		if err := waitFor(ctx, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
			if err := cp.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, p); err != nil {
				return false, err
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		}); err != nil {
			t.Fatalf("pod %s not Ready: %v (status %+v)\n%s", name, err, p.Status, n1.kubelet.Tail(2000))
		}
		return p
	}
	ready("host")
	inpod := ready("inpod")
	code, body, err := f.Get(ctx, n1.IP+":80", "x")
	if err != nil || code != 200 || !strings.Contains(body, "hello from host") {
		t.Fatalf("host-network pod from the client: %d %q %v", code, body, err)
	}
	code, body, err = f.Get(ctx, inpod.Status.PodIP+":8080", "x")
	if err != nil || code != 200 || !strings.Contains(body, "hello from inpod") {
		t.Fatalf("pod IP on another node from the client: %d %q %v", code, body, err)
	}
	// A dynamically linked binary finds every library it needs in its image.
	ka := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "keepalived"}, Spec: corev1.PodSpec{
		NodeName: n2.Name, RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "keepalived", Image: KeepalivedImage, ImagePullPolicy: corev1.PullNever, Args: []string{"--version"}}}}}
	if err := cp.Client.Create(ctx, ka); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(ka), ka); err != nil {
			return false, err
		}
		return ka.Status.Phase == corev1.PodSucceeded || ka.Status.Phase == corev1.PodFailed, nil
	}); err != nil || ka.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("keepalived --version in its image: %v, phase %s, status %+v", err, ka.Status.Phase, ka.Status.ContainerStatuses)
	}
}
