package framework

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestMain(m *testing.M) { Main(m) }

// TestSimulatedNodesAndRestart proves the pieces the e2e specs lean on: simulated nodes that
// flip readiness on request, a Deployment that produces Ready pods on them, and an API server
// restart that keeps address, data and credentials.
func TestSimulatedNodesAndRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp := StartControlPlane(t, "user", ControlPlaneOptions{SimulatedNodes: true})

	for _, n := range []NodeSpec{{Name: "n1", InternalIP: "127.0.1.1"}, {Name: "n2", InternalIP: "127.0.1.2"}} {
		if err := cp.AddNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	dep := testDeployment("web", 2)
	if err := cp.Client.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	if err := waitDeploymentReady(ctx, cp, dep, 2); err != nil {
		t.Fatal(err)
	}

	// Readiness flips only when asked and stays flipped across kwok heartbeats.
	start := time.Now()
	if err := cp.SetNodeReady(ctx, "n1", false); err != nil {
		t.Fatal(err)
	}
	t.Logf("NotReady after %s", time.Since(start))
	time.Sleep(2 * time.Second)
	n1 := &corev1.Node{}
	if err := cp.Client.Get(ctx, client.ObjectKey{Name: "n1"}, n1); err != nil {
		t.Fatal(err)
	}
	if nodeReady(n1) {
		t.Fatalf("n1 became Ready again without being asked")
	}
	start = time.Now()
	if err := cp.SetNodeReady(ctx, "n1", true); err != nil {
		t.Fatal(err)
	}
	t.Logf("Ready after %s", time.Since(start))

	// Restart: the kubeconfig handed out before the restart still works afterwards, and the data
	// is still there.
	kc, err := cp.Kubeconfig("someone", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	if err := cp.Healthy(ctx); err == nil {
		t.Fatalf("API server still answers after StopAPIServer")
	}
	if err := cp.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := ClientFromKubeconfig(kc, Scheme())
	if err != nil {
		t.Fatal(err)
	}
	got := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(dep), got); err != nil {
		t.Fatalf("old credentials after restart: %v", err)
	}
}

func testDeployment(name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "example.invalid/web:1"}}},
			},
		},
	}
}

func waitDeploymentReady(ctx context.Context, cp *ControlPlane, dep *appsv1.Deployment, replicas int32) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	return waitFor(ctx, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		got := &appsv1.Deployment{}
		if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(dep), got); err != nil {
			return false, err
		}
		return got.Status.ReadyReplicas == replicas, nil
	})
}
