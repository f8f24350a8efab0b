package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/miekg/dns"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/test/framework"
)

// HarnessSpecInput is what HarnessSpec runs on.
type HarnessSpecInput struct {
	Seed  *framework.ControlPlane
	Users []*framework.ControlPlane // with simulated nodes
	DNS   *framework.DNSServer      // with external-dns reading the seed
}

// HarnessSpec proves the ground every other spec stands on: Deployments in user clusters become
// Ready pods on simulated nodes, and a DNSEndpoint in the seed is served by BIND through
// external-dns, follows a target change, and disappears when deleted.
func HarnessSpec(ctx context.Context, t *testing.T, inputGetter func() HarnessSpecInput) {
	in := inputGetter()

	t.Run("deployments become ready pods on simulated nodes", func(t *testing.T) {
		for i, user := range in.Users {
			nodes := map[string]bool{}
			for j := 1; j <= 2; j++ {
				n := framework.NodeSpec{Name: fmt.Sprintf("node-%d", j), InternalIP: fmt.Sprintf("127.0.%d.%d", 10+i, j)}
				if err := user.AddNode(ctx, n); err != nil {
					t.Fatal(err)
				}
				nodes[n.Name] = true
			}
			dep := deployment("default", "web", 3)
			if err := user.Client.Create(ctx, dep); err != nil {
				t.Fatal(err)
			}
			eventually(ctx, t, 60*time.Second, func() (bool, string) {
				got := &appsv1.Deployment{}
				if err := user.Client.Get(ctx, client.ObjectKeyFromObject(dep), got); err != nil {
					return false, err.Error()
				}
				return got.Status.ReadyReplicas == 3, fmt.Sprintf("%s: readyReplicas=%d", user.Name, got.Status.ReadyReplicas)
			})
			pods := &corev1.PodList{}
			if err := user.Client.List(ctx, pods, client.InNamespace("default"), client.MatchingLabels{"app": "web"}); err != nil {
				t.Fatal(err)
			}
			if len(pods.Items) != 3 {
				t.Fatalf("%s: %d pods, want 3", user.Name, len(pods.Items))
			}
			for _, p := range pods.Items {
				if !nodes[p.Spec.NodeName] || p.Status.Phase != corev1.PodRunning || !podReady(&p) {
					t.Fatalf("%s: pod %s on %q phase %s ready %v; want Running and Ready on a simulated node",
						user.Name, p.Name, p.Spec.NodeName, p.Status.Phase, podReady(&p))
				}
			}
		}
	})

	t.Run("dnsendpoint is served by bind through external-dns", func(t *testing.T) {
		zone := in.DNS.Zone
		name := "*.c1." + zone
		ep := dnsEndpoint("default", "c1", name, "127.0.1.1", "127.0.1.2")
		if err := in.Seed.Client.Create(ctx, ep); err != nil {
			t.Fatal(err)
		}
		query := "foo.c1." + zone
		waitAnswer(ctx, t, in.DNS, query, framework.AnswerIs("127.0.1.1", "127.0.1.2"))

		// The check can fail: a wrong expectation does not match the real answer.
		short, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if a, err := in.DNS.WaitForAnswer(short, query, dns.TypeA, framework.AnswerIs("127.0.1.1", "127.0.1.9")); err == nil {
			t.Fatalf("a wrong expected address matched the answer %s", a)
		}

		// A target change is followed.
		if err := in.Seed.Client.Get(ctx, client.ObjectKeyFromObject(ep), ep); err != nil {
			t.Fatal(err)
		}
		setTargets(ep, "127.0.1.3")
		if err := in.Seed.Client.Update(ctx, ep); err != nil {
			t.Fatal(err)
		}
		waitAnswer(ctx, t, in.DNS, query, framework.AnswerIs("127.0.1.3"))

		// Deleted: the name no longer exists.
		if err := in.Seed.Client.Delete(ctx, ep); err != nil {
			t.Fatal(err)
		}
		waitAnswer(ctx, t, in.DNS, query, framework.AnswerNXDomain)
	})
}

func TestHarness(t *testing.T) {
	t.Parallel() // see main_test.go
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	env := framework.StartEnvironment(t, framework.EnvironmentOptions{UserClusters: 2, SimulatedNodes: true, DNS: true})
	HarnessSpec(ctx, t, func() HarnessSpecInput {
		return HarnessSpecInput{Seed: env.Seed, Users: env.Users, DNS: env.DNS}
	})
}

var dnsEndpointGVK = schema.GroupVersionKind{Group: "externaldns.k8s.io", Version: "v1alpha1", Kind: "DNSEndpoint"}

func dnsEndpoint(ns, name, dnsName string, targets ...string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(dnsEndpointGVK)
	u.SetNamespace(ns)
	u.SetName(name)
	u.Object["spec"] = map[string]any{"endpoints": []any{map[string]any{
		"dnsName": dnsName, "recordType": "A", "recordTTL": int64(30), "targets": toAny(targets),
	}}}
	return u
}

func setTargets(u *unstructured.Unstructured, targets ...string) {
	eps := u.Object["spec"].(map[string]any)["endpoints"].([]any)
	eps[0].(map[string]any)["targets"] = toAny(targets)
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func deployment(ns, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: "example.invalid/" + name + ":1"}}},
			},
		},
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
