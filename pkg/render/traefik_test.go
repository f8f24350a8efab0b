package render

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/ingressclass"
	"github.com/shardgate/shardgate/pkg/names"
)

func render(t *testing.T, s v1alpha1.ShardSpec) map[string]*unstructured.Unstructured {
	t.Helper()
	s = v1alpha1.ResolveShards([]v1alpha1.ShardSpec{s})[0]
	objs, err := RenderShard(Traefik{}, RenderInput{Domain: names.ShardDomain(s.Name, "c1.example.test"), Shard: s, DNSTTL: 60})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		m[o.GetKind()] = o
		if o.GetLabels()[v1alpha1.ManagedByLabel] != v1alpha1.ManagedByValue {
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
	if d.Namespace != names.Namespace || d.Name != "router-default" || *d.Spec.Replicas != 1 || !pod.HostNetwork || pod.Affinity != nil {
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
	// Binding :80 on the node needs CAP_NET_BIND_SERVICE in the effective set, which only root
	// gets on a real kubelet (no ambient capabilities): root, every other capability dropped,
	// no privilege escalation.
	sc := c.SecurityContext
	if *sc.RunAsUser != 0 || *sc.RunAsNonRoot || *sc.AllowPrivilegeEscalation || !*sc.ReadOnlyRootFilesystem ||
		!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || !slices.Equal(sc.Capabilities.Add, []corev1.Capability{"NET_BIND_SERVICE"}) {
		t.Errorf("security context: %+v", sc)
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
		if len(terms) != 1 || terms[0].TopologyKey != corev1.LabelHostname || terms[0].LabelSelector.MatchLabels[v1alpha1.ShardLabel] != "edge" {
			t.Errorf("anti-affinity: %+v", terms)
		}
		if len(d.Spec.Template.Spec.TopologySpreadConstraints) != 1 {
			t.Errorf("no topology spread")
		}
		if d.Spec.Strategy.RollingUpdate.MaxUnavailable.IntVal != 0 || d.Spec.Strategy.RollingUpdate.MaxSurge.IntVal != 1 {
			t.Errorf("rolling update must keep capacity: %+v", d.Spec.Strategy.RollingUpdate)
		}
		// Unprivileged ports behind a Service: non-root, no capabilities at all.
		if sc := d.Spec.Template.Spec.Containers[0].SecurityContext; *sc.RunAsUser != 65532 || !*sc.RunAsNonRoot || len(sc.Capabilities.Add) != 0 {
			t.Errorf("security context: %+v", sc)
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
	// The default-class mark is never part of the rendered class (DecideDefaultClass sets it
	// apart, once): the main apply must not fight an administrator who changes it.
	if _, marked := objs[1].GetAnnotations()[ingressclass.DefaultClassAnnotation]; len(objs) != 2 || objs[1].GetKind() != "IngressClass" || marked {
		t.Fatalf("shared objects: %v", objs)
	}
	ctrl, _, _ := unstructured.NestedString(objs[1].Object, "spec", "controller")
	if ctrl != "traefik.io/ingress-controller" {
		t.Fatalf("class controller %q", ctrl)
	}
}

func TestResolveShardsAndDomains(t *testing.T) {
	s := v1alpha1.ResolveShards(nil)
	if len(s) != 1 || s[0].Name != "default" || *s[0].Replicas != 1 || s[0].Publishing != v1alpha1.PublishHostNetwork || s[0].Flavour != v1alpha1.FlavourTraefik {
		t.Fatalf("default shard: %+v", s)
	}
	if names.ShardDomain("default", "c1.z") != "c1.z" || names.ShardDomain("edge", "c1.z") != "edge.c1.z" {
		t.Fatal("shard domains")
	}
}

func TestDesiredObjectsAndUserInfo(t *testing.T) {
	shards := v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default"}, {Name: "edge", Publishing: v1alpha1.PublishNodePort}})
	objs, err := DesiredObjects(DesiredInput{RouteKinds: ingressOnly,
		ClusterDomain: "c1.z", TTL: 60, Shards: shards, ShardgateUser: "shardgate-user", AdmissionPolicy: true})
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
	// Without the admission policy API (Kubernetes < 1.30) no policy is rendered.
	without, err := DesiredObjects(DesiredInput{RouteKinds: ingressOnly,
		ClusterDomain: "c1.z", TTL: 60, Shards: shards, ShardgateUser: "shardgate-user"})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range without {
		if strings.HasPrefix(o.GetKind(), "ValidatingAdmissionPolicy") {
			t.Errorf("%s rendered for a cluster without the API", o.GetKind())
		}
	}
}

// TestAppliedHash: every rendered object carries the hash of what is applied, and a field
// dropped from a shard's spec changes it, so the dropped field is removed in the cluster (the
// field-by-field check alone cannot see a field that is no longer desired).
func TestAppliedHash(t *testing.T) {
	deployment := func(s v1alpha1.ShardSpec) *unstructured.Unstructured {
		objs, err := DesiredObjects(DesiredInput{RouteKinds: ingressOnly,
			ClusterDomain: "c1.z", TTL: 60, Shards: v1alpha1.ResolveShards([]v1alpha1.ShardSpec{s}), ShardgateUser: "u"})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if o.GetKind() == "Deployment" {
				return o
			}
		}
		t.Fatal("no Deployment")
		return nil
	}
	with := deployment(v1alpha1.ShardSpec{Name: "default", NodeSelector: map[string]string{"role": "edge", "zone": "a"}})
	without := deployment(v1alpha1.ShardSpec{Name: "default", NodeSelector: map[string]string{"role": "edge"}})
	again := deployment(v1alpha1.ShardSpec{Name: "default", NodeSelector: map[string]string{"zone": "a", "role": "edge"}})
	h := func(o *unstructured.Unstructured) string { return o.GetAnnotations()[AppliedHashAnnotation] }
	if h(with) == "" || h(with) == h(without) {
		t.Fatalf("hash %q must change when a map key is dropped (%q)", h(with), h(without))
	}
	if h(with) != h(again) {
		t.Fatal("the hash depends on map order")
	}
}

// TestTraefikClassIsTheOneUsersName: users' Ingresses and running clusters name "shardgate", and
// the flavour contract must never rename it.
func TestTraefikClassIsTheOneUsersName(t *testing.T) {
	if c := (Traefik{}).IngressClass(); c.Name != "shardgate" || c.Controller != "traefik.io/ingress-controller" {
		t.Fatalf("Traefik's class %+v", c)
	}
	if d := DefaultIngressClass(v1alpha1.ResolveShards(nil)); d != "shardgate" {
		t.Fatalf("default class %q", d)
	}
}
