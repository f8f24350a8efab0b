package ingress

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

func render(t *testing.T, s v1alpha1.ShardSpec) map[string]*unstructured.Unstructured {
	t.Helper()
	s = v1alpha1.ResolveShards([]v1alpha1.ShardSpec{s})[0]
	objs, err := Traefik{}.Render(RenderInput{ClusterID: "c1", Domain: ShardDomain(s.Name, "c1.example.test"), Shard: s, DNSTTL: 60})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		m[o.GetKind()] = o
		if o.GetLabels()[ManagedByLabel] != ManagedByValue {
			t.Errorf("%s %s lacks the managed-by label", o.GetKind(), o.GetName())
		}
		if _, ok := o.Object["status"]; ok {
			t.Errorf("%s carries status", o.GetKind())
		}
		if ts, ok, _ := unstructured.NestedFieldNoCopy(o.Object, "metadata", "creationTimestamp"); ok {
			t.Errorf("%s carries creationTimestamp %v: server-side apply would claim it", o.GetKind(), ts)
		}
	}
	return m
}

func as[T any](t *testing.T, u *unstructured.Unstructured) *T {
	t.Helper()
	if u == nil {
		t.Fatal("object missing")
	}
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestTraefikSingleReplicaHostNetwork(t *testing.T) {
	objs := render(t, v1alpha1.ShardSpec{Name: "default"})
	for _, k := range []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Deployment"} {
		if objs[k] == nil {
			t.Errorf("no %s rendered", k)
		}
	}
	if objs["Service"] != nil || objs["PodDisruptionBudget"] != nil {
		t.Errorf("HostNetwork single replica needs no Service and no PDB")
	}
	d := as[appsv1.Deployment](t, objs["Deployment"])
	pod := d.Spec.Template.Spec
	if d.Namespace != Namespace || d.Name != "router-default" || *d.Spec.Replicas != 1 || !pod.HostNetwork || pod.Affinity != nil {
		t.Fatalf("deployment: %+v", d)
	}
	args := pod.Containers[0].Args
	for _, want := range []string{
		"--providers.kubernetesingress.ingressclass=shardgate",
		"--providers.kubernetesingress.labelselector=shardgate.io/shard=default",
		"--providers.kubernetesingress.ingressendpoint.hostname=c1.example.test",
		"--entryPoints.web.address=:80", "--entryPoints.traefik.address=:9000",
	} {
		if !slices.Contains(args, want) {
			t.Errorf("args lack %q: %v", want, args)
		}
	}
	c := pod.Containers[0]
	if c.Lifecycle.PreStop.Sleep.Seconds != 75 || *pod.TerminationGracePeriodSeconds != 105 {
		t.Errorf("preStop %d / grace %d: must outlast the DNS TTL", c.Lifecycle.PreStop.Sleep.Seconds, *pod.TerminationGracePeriodSeconds)
	}
	if !*c.SecurityContext.RunAsNonRoot || !slices.Contains(c.SecurityContext.Capabilities.Add, "NET_BIND_SERVICE") {
		t.Errorf("security context: %+v", c.SecurityContext)
	}
	if d.Spec.Strategy.RollingUpdate.MaxSurge.IntVal != 0 {
		t.Errorf("host ports cannot surge")
	}
}

func TestTraefikHA(t *testing.T) {
	for _, tt := range []struct {
		replicas       int32
		maxUnavailable string
	}{{2, "1"}, {3, "25%"}, {5, "25%"}} {
		objs := render(t, v1alpha1.ShardSpec{Name: "edge", Replicas: ptr.To(tt.replicas), Publishing: v1alpha1.PublishNodePort})
		pdb := as[policyv1.PodDisruptionBudget](t, objs["PodDisruptionBudget"])
		if pdb.Spec.MaxUnavailable.String() != tt.maxUnavailable {
			t.Errorf("%d replicas: PDB maxUnavailable %s, want %s", tt.replicas, pdb.Spec.MaxUnavailable.String(), tt.maxUnavailable)
		}
		d := as[appsv1.Deployment](t, objs["Deployment"])
		terms := d.Spec.Template.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		if len(terms) != 1 || terms[0].TopologyKey != corev1.LabelHostname || terms[0].LabelSelector.MatchLabels[ShardLabel] != "edge" {
			t.Errorf("anti-affinity: %+v", terms)
		}
		if len(d.Spec.Template.Spec.TopologySpreadConstraints) != 1 {
			t.Errorf("no topology spread")
		}
		if d.Spec.Strategy.RollingUpdate.MaxUnavailable.IntVal != 0 || d.Spec.Strategy.RollingUpdate.MaxSurge.IntVal != 1 {
			t.Errorf("rolling update must keep capacity: %+v", d.Spec.Strategy.RollingUpdate)
		}
		svc := as[corev1.Service](t, objs["Service"])
		if svc.Spec.Type != corev1.ServiceTypeNodePort || svc.Spec.Ports[0].TargetPort.IntVal != 8000 {
			t.Errorf("service: %+v", svc.Spec)
		}
		if !slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--providers.kubernetesingress.ingressendpoint.hostname=edge.c1.example.test") {
			t.Errorf("non-default shard must publish its own domain")
		}
	}
}

func TestTraefikLoadBalancerAndSelectors(t *testing.T) {
	objs := render(t, v1alpha1.ShardSpec{Name: "lb", Publishing: v1alpha1.PublishLoadBalancer, Image: "registry.example/traefik:1",
		NodeSelector: map[string]string{"role": "ingress"}, Tolerations: []corev1.Toleration{{Key: "ingress", Operator: corev1.TolerationOpExists}}})
	svc := as[corev1.Service](t, objs["Service"])
	d := as[appsv1.Deployment](t, objs["Deployment"])
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || d.Spec.Template.Spec.HostNetwork {
		t.Fatalf("load balancer publishing: %s hostNetwork=%v", svc.Spec.Type, d.Spec.Template.Spec.HostNetwork)
	}
	pod := d.Spec.Template.Spec
	if pod.NodeSelector["role"] != "ingress" || len(pod.Tolerations) != 1 || pod.Containers[0].Image != "registry.example/traefik:1" {
		t.Fatalf("selectors/image not rendered: %+v", pod)
	}
}

func TestSharedObjects(t *testing.T) {
	objs, err := SharedObjects(Traefik{})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 || objs[1].GetKind() != "IngressClass" || objs[1].GetAnnotations()[defaultClassAnnotation] != "true" {
		t.Fatalf("shared objects: %v", objs)
	}
	ctrl, _, _ := unstructured.NestedString(objs[1].Object, "spec", "controller")
	if ctrl != "traefik.io/ingress-controller" {
		t.Fatalf("class controller %q", ctrl)
	}
}

func TestValidateShards(t *testing.T) {
	bad := []v1alpha1.ShardSpec{
		{Name: "a"}, {Name: "a"},
		{Name: "Bad_Name"},
		{Name: "r", Replicas: ptr.To[int32](0)},
		{Name: "f", Flavour: "nginx"},
		{Name: "p", Publishing: "VIP"},
		{Name: "s", RouteSelector: &metav1LabelSelectorBad},
	}
	errs := ValidateShards(bad, field.NewPath("spec", "shards"))
	want := []string{"spec.shards[1].name: Duplicate", "spec.shards[2].name: Invalid", "spec.shards[3].replicas: Invalid",
		"spec.shards[4].flavour: Unsupported", "spec.shards[5].publishing: Unsupported", "spec.shards[6].routeSelector: Invalid"}
	got := errs.ToAggregate().Error()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("missing %q in %s", w, got)
		}
	}
	if len(errs) != len(want) {
		t.Errorf("got %d errors, want %d: %s", len(errs), len(want), got)
	}
	if errs := ValidateShards(v1alpha1.ResolveShards(nil), field.NewPath("s")); len(errs) != 0 {
		t.Errorf("default shard invalid: %v", errs)
	}
}

func TestResolveShardsAndDomains(t *testing.T) {
	s := v1alpha1.ResolveShards(nil)
	if len(s) != 1 || s[0].Name != "default" || *s[0].Replicas != 1 || s[0].Publishing != v1alpha1.PublishHostNetwork || s[0].Flavour != v1alpha1.FlavourTraefik {
		t.Fatalf("default shard: %+v", s)
	}
	if ShardDomain("default", "c1.z") != "c1.z" || ShardDomain("edge", "c1.z") != "edge.c1.z" {
		t.Fatal("shard domains")
	}
}

var metav1LabelSelectorBad = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Bogus"}}}

func TestDesiredObjectsAndUserInfo(t *testing.T) {
	shards := v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default"}, {Name: "edge", Publishing: v1alpha1.PublishNodePort}})
	objs, err := DesiredObjects("c1", "c1.z", 60, shards, "shardgate-user")
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	var info *unstructured.Unstructured
	for _, o := range objs {
		count[o.GetKind()]++
		if o.GetKind() == "ConfigMap" {
			info = o
		}
	}
	// One namespace, class, role and info map; per shard a SA, binding and Deployment; one Service (NodePort).
	want := map[string]int{"Namespace": 1, "IngressClass": 1, "ClusterRole": 1, "ConfigMap": 1, "ServiceAccount": 2, "ClusterRoleBinding": 2, "Deployment": 2, "Service": 1,
		"ValidatingAdmissionPolicy": 1, "ValidatingAdmissionPolicyBinding": 1}
	for k, n := range want {
		if count[k] != n {
			t.Errorf("%s: %d, want %d (all: %v)", k, count[k], n, count)
		}
	}
	cm := as[corev1.ConfigMap](t, info)
	if cm.Namespace != "kube-public" || cm.Data["clusterDomain"] != "c1.z" || cm.Data["shard.edge.cnameTarget"] != "edge.c1.z" ||
		cm.Data["shard.default.domain"] != "c1.z" || !strings.Contains(cm.Data["README"], "CNAME") {
		t.Fatalf("user info: %+v", cm.Data)
	}
}
