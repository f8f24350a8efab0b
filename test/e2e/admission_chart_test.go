package e2e

import (
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/shardgate/shardgate/pkg/admission"
)

// TestAdmissionWebhookChart: the chart registers the IngressProfile webhook (CREATE and UPDATE of
// ingressprofiles only, failurePolicy Ignore, no caBundle of its own) behind a Service on the
// controller's webhook port, passes the controller its four flags, and grants it no more than
// its own Secret and its own configuration; admissionWebhook.enabled=false renders none of it.
func TestAdmissionWebhookChart(t *testing.T) {
	t.Parallel() // see main_test.go
	objs := renderChart(t, "--namespace", "sg", "--set", "dns.zone=ok.example")
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	fromUnstructured(t, objs["ValidatingWebhookConfiguration/x-shardgate"], vwc)
	if len(vwc.Webhooks) != 1 {
		t.Fatalf("webhooks %+v", vwc.Webhooks)
	}
	w := vwc.Webhooks[0]
	svc := w.ClientConfig.Service
	rule := w.Rules[0]
	if svc == nil || svc.Name != "x-shardgate-webhook" || svc.Namespace != "sg" || *svc.Path != admission.ProfilePath ||
		len(w.ClientConfig.CABundle) != 0 || *w.FailurePolicy != admissionregistrationv1.Ignore ||
		*w.SideEffects != admissionregistrationv1.SideEffectClassNone || !slices.Equal(w.AdmissionReviewVersions, []string{"v1"}) ||
		*w.TimeoutSeconds != 5 || len(w.Rules) != 1 || !slices.Equal(rule.Resources, []string{"ingressprofiles"}) ||
		!slices.Equal(rule.APIGroups, []string{"shardgate.io"}) || !slices.Equal(rule.Operations,
		[]admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}) {
		t.Errorf("webhook %+v", w)
	}
	service := &corev1.Service{}
	fromUnstructured(t, objs["Service/x-shardgate-webhook"], service)
	if p := service.Spec.Ports; len(p) != 1 || p[0].Port != 443 || p[0].TargetPort.StrVal != "webhook" {
		t.Errorf("Service ports %+v", p)
	}
	d := &appsv1.Deployment{}
	fromUnstructured(t, objs["Deployment/x-shardgate"], d)
	c := d.Spec.Template.Spec.Containers[0]
	for _, want := range []string{"--admission-webhook-bind-address=:9443", "--admission-webhook-configuration=x-shardgate",
		"--admission-webhook-hosts=x-shardgate-webhook.sg.svc,x-shardgate-webhook.sg.svc.cluster.local"} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("args %v lack %s", c.Args, want)
		}
	}
	if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "webhook" && p.ContainerPort == 9443 }) {
		t.Errorf("container ports %+v", c.Ports)
	}

	// Least privilege: the only grant of webhook configurations is this one, get/update of its
	// one object; no Secret is written for the webhook (each replica's key stays in memory).
	clusterRole := &rbacv1.ClusterRole{}
	fromUnstructured(t, objs["ClusterRole/x-shardgate-webhook"], clusterRole)
	wantClusterRole := []rbacv1.PolicyRule{{APIGroups: []string{"admissionregistration.k8s.io"},
		Resources: []string{"validatingwebhookconfigurations"}, ResourceNames: []string{"x-shardgate"}, Verbs: []string{"get", "update"}}}
	if !rulesEqual(clusterRole.Rules, wantClusterRole) {
		t.Errorf("ClusterRole %+v", clusterRole.Rules)
	}
	if objs["Role/x-shardgate-webhook"] != nil {
		t.Error("a Role for the webhook: it needs none")
	}
	for key, u := range objs {
		if key == "ClusterRole/x-shardgate-webhook" {
			continue
		}
		var rules []rbacv1.PolicyRule
		switch u.GetKind() {
		case "Role":
			r := &rbacv1.Role{}
			fromUnstructured(t, u, r)
			rules = r.Rules
		case "ClusterRole":
			r := &rbacv1.ClusterRole{}
			fromUnstructured(t, u, r)
			rules = r.Rules
		}
		for _, r := range rules {
			if slices.Contains(r.Resources, "validatingwebhookconfigurations") || (slices.Contains(r.Resources, "secrets") &&
				slices.ContainsFunc(r.Verbs, func(v string) bool { return v != "get" && v != "list" && v != "watch" })) {
				t.Errorf("%s grants %+v", key, r)
			}
		}
	}
	bindsTo := func(key, roleKind, roleName string) {
		t.Helper()
		u := objs[key]
		if u == nil {
			t.Errorf("no %s", key)
			return
		}
		var ref rbacv1.RoleRef
		var subjects []rbacv1.Subject
		if u.GetKind() == "RoleBinding" {
			b := &rbacv1.RoleBinding{}
			fromUnstructured(t, u, b)
			ref, subjects = b.RoleRef, b.Subjects
		} else {
			b := &rbacv1.ClusterRoleBinding{}
			fromUnstructured(t, u, b)
			ref, subjects = b.RoleRef, b.Subjects
		}
		if ref.Kind != roleKind || ref.Name != roleName || len(subjects) != 1 || subjects[0].Name != "x-shardgate" ||
			subjects[0].Namespace != "sg" {
			t.Errorf("%s binds %+v to %+v", key, ref, subjects)
		}
	}
	bindsTo("ClusterRoleBinding/x-shardgate-webhook", "ClusterRole", "x-shardgate-webhook")

	off := renderChart(t, "--namespace", "sg", "--set", "dns.zone=ok.example", "--set", "admissionWebhook.enabled=false")
	for key, u := range off {
		if strings.Contains(key, "webhook") || (u.GetKind() == "Deployment" &&
			strings.Contains(strings.Join(nestedArgs(u), " "), "--admission-webhook")) {
			t.Errorf("admissionWebhook.enabled=false renders %s", key)
		}
	}
	if out, err := helm(t, "template", "x", chart, "--set", "dns.zone=ok.example", "--set",
		"admissionWebhook.failurePolicy=Sometimes"); err == nil || !strings.Contains(out, "/admissionWebhook/failurePolicy") {
		t.Errorf("failurePolicy=Sometimes: %v %s", err, out)
	}
}

// renderChart renders the chart with args; its objects by kind/name.
func renderChart(t *testing.T, args ...string) map[string]*unstructured.Unstructured {
	t.Helper()
	out, err := helm(t, append([]string{"template", "x", chart}, args...)...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	objs := map[string]*unstructured.Unstructured{}
	for _, u := range manifests(out) {
		objs[u.GetKind()+"/"+u.GetName()] = u
	}
	return objs
}

func fromUnstructured(t *testing.T, u *unstructured.Unstructured, into any) {
	t.Helper()
	if u == nil {
		t.Fatalf("not rendered: %T", into)
	}
	must(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into))
}

func nestedArgs(u *unstructured.Unstructured) []string {
	cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	var out []string
	for _, c := range cs {
		if m, ok := c.(map[string]any); ok {
			args, _, _ := unstructured.NestedStringSlice(m, "args")
			out = append(out, args...)
		}
	}
	return out
}

func rulesEqual(a, b []rbacv1.PolicyRule) bool {
	return slices.EqualFunc(a, b, func(x, y rbacv1.PolicyRule) bool {
		return slices.Equal(x.APIGroups, y.APIGroups) && slices.Equal(x.Resources, y.Resources) &&
			slices.Equal(x.ResourceNames, y.ResourceNames) && slices.Equal(x.Verbs, y.Verbs) && len(x.NonResourceURLs) == 0
	})
}
