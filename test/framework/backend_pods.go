package framework

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DeployBackend runs the sample app as a real Deployment (BackendImage, answering "hello from
// <name>") behind Service ns/name port 80, and waits until its pods are Ready.
func DeployBackend(ctx context.Context, cp *ControlPlane, ns, name string, replicas int32) error {
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			AutomountServiceAccountToken:  ptr.To(false),
			Containers: []corev1.Container{{Name: "app", Image: BackendImage, ImagePullPolicy: corev1.PullNever,
				Env:   []corev1.EnvVar{{Name: "NAME", Value: name + " in " + ns}, {Name: "PORT", Value: "8080"}},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}},
					PeriodSeconds: 1},
				SecurityContext: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532),
					AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			}}}}}}
	if err := cp.Client.Create(ctx, d); err != nil {
		return err
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{Selector: labels,
		Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}}}
	if err := cp.Client.Create(ctx, svc); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return waitFor(wctx, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
			return false, err
		}
		if d.Status.ReadyReplicas == replicas {
			return true, nil
		}
		return false, nil
	})
}

// WaitRouters waits until a shard's router Deployment has all its replicas ready (real pods).
func WaitRouters(ctx context.Context, cp *ControlPlane, namespace, name string) error {
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	d := &appsv1.Deployment{}
	err := waitFor(wctx, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		if err := cp.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, d); err != nil {
			return false, nil //nolint:nilerr // not created yet
		}
		return d.Spec.Replicas != nil && d.Status.ReadyReplicas == *d.Spec.Replicas && d.Status.UpdatedReplicas == *d.Spec.Replicas, nil
	})
	if err != nil {
		return fmt.Errorf("routers %s/%s not ready: %w (status %+v)", namespace, name, err, d.Status)
	}
	return nil
}

// Evict asks the API server to evict pod through the eviction API (what kubectl drain does),
// which refuses (429) when the pod's PodDisruptionBudget allows no more disruption.
func Evict(ctx context.Context, cp *ControlPlane, pod *corev1.Pod) error {
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}}
	return cp.Client.SubResource("eviction").Create(ctx, pod, ev)
}
