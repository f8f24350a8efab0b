package render_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/pkg/render/flavourtest"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

func as[T any](t *testing.T, objs []*unstructured.Unstructured, kind, name string) *T {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			out := new(T)
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, out); err != nil {
				t.Fatal(err)
			}
			return out
		}
	}
	t.Fatalf("no %s %s rendered", kind, name)
	return nil
}

func twoFlavours(t *testing.T, shards ...v1alpha1.ShardSpec) []*unstructured.Unstructured {
	t.Helper()
	objs, err := render.DesiredObjects(render.DesiredInput{ClusterDomain: "c1.z.test", TTL: 60, ShardgateUser: "u",
		Canary: true, AdmissionPolicy: true, RouteKinds: routekinds.Registry{routekinds.Ingress{}}, TLS: &render.TLSInput{RedirectHTTP: true, Cert: []byte("c"), Key: []byte("k")},
		Shards: v1alpha1.ResolveShards(shards), VIP: map[string]*render.VIPInput{}})
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// TestTwoFlavoursShareACluster: a Traefik shard and two shards of a flavour the renderer was not
// written for, in one cluster. Each flavour brings its class (with its own controller), its role
// and its TLS wiring; the shared shape (ports behind a Service and on the host network, probes,
// the canary route, the VIP agent's health URL) follows the flavour; and adding them changes none
// of the Traefik shard's objects (no Traefik router restarts when a shard of another flavour
// comes).
func TestTwoFlavoursShareACluster(t *testing.T) {
	flavourtest.Use(t)
	traefik := v1alpha1.ShardSpec{Name: "default"}
	objs := twoFlavours(t, traefik,
		v1alpha1.ShardSpec{Name: "fast", Flavour: flavourtest.Name, Publishing: v1alpha1.PublishNodePort,
			Replicas: ptr.To[int32](2)},
		v1alpha1.ShardSpec{Name: "edge", Flavour: flavourtest.Name, Publishing: v1alpha1.PublishVIP,
			VIP: &v1alpha1.VIPSettings{Pool: []string{"192.0.2.0/28"}, Count: 1}})

	classes := map[string]string{names.IngressClassName: "traefik.io/ingress-controller", flavourtest.Class: flavourtest.Controller}
	for class, controller := range classes {
		if c := as[networkingv1.IngressClass](t, objs, "IngressClass", class); c.Spec.Controller != controller {
			t.Errorf("class %s: controller %s, want %s", class, c.Spec.Controller, controller)
		}
	}
	for _, o := range objs {
		if o.GetLabels()[v1alpha1.ManagedByLabel] != v1alpha1.ManagedByValue {
			t.Errorf("%s %s is not labelled Shardgate's", o.GetKind(), o.GetName())
		}
	}
	as[rbacv1.ClusterRole](t, objs, "ClusterRole", flavourtest.Role)
	as[corev1.ConfigMap](t, objs, "ConfigMap", flavourtest.TLSConfigName)
	as[corev1.ConfigMap](t, objs, "ConfigMap", render.TraefikTLSConfigName)
	if b := as[rbacv1.ClusterRoleBinding](t, objs, "ClusterRoleBinding", "shardgate-router-fast"); b.RoleRef.Name !=
		flavourtest.Role {
		t.Errorf("fast's routers bound to %s", b.RoleRef.Name)
	}

	// Behind a Service: the flavour's ports, probes and container, with the shared least privilege.
	fast := as[appsv1.Deployment](t, objs, "Deployment", "router-fast").Spec.Template.Spec
	c := fast.Containers[0]
	if c.Name != "fake-router" || c.Image != flavourtest.Image || !slices.Contains(c.Args, "--selector=shardgate.io/shard=fast") ||
		!slices.Contains(c.Args, "--https=:8444") ||
		!slices.Contains(c.Args, "--default-certificate=shardgate-system/shardgate-tls") {
		t.Errorf("fast's router: %s %s %v", c.Name, c.Image, c.Args)
	}
	if c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe.HTTPGet.Path != "/livez" ||
		c.ReadinessProbe.HTTPGet.Port.IntVal != flavourtest.Admin {
		t.Errorf("probes: %+v / %+v", c.ReadinessProbe.HTTPGet, c.LivenessProbe.HTTPGet)
	}
	if sc := c.SecurityContext; *sc.RunAsUser == 0 || len(sc.Capabilities.Add) != 0 || fast.SecurityContext != nil {
		t.Errorf("security: %+v, pod %+v (no mounted key pair: no fsGroup)", sc, fast.SecurityContext)
	}
	svc := as[corev1.Service](t, objs, "Service", "router-fast")
	if svc.Spec.Ports[0].Port != 80 || svc.Spec.Ports[0].TargetPort.IntVal != flavourtest.HTTP {
		t.Errorf("fast's Service: %+v", svc.Spec.Ports)
	}
	// Its canary: the flavour's class, request and port.
	ing := as[networkingv1.Ingress](t, objs, "Ingress", names.CanaryName("fast"))
	if *ing.Spec.IngressClassName != flavourtest.Class || ing.Spec.Rules[0].HTTP.Paths[0].Path != "/canary" {
		t.Errorf("fast's canary: %+v", ing.Spec)
	}
	if svc = as[corev1.Service](t, objs, "Service", names.CanaryName("fast")); svc.Spec.Ports[0].TargetPort.IntVal != flavourtest.Admin {
		t.Errorf("fast's canary Service: %+v", svc.Spec.Ports)
	}

	// On the host network (VIP): the node's 80 and 443, and the VIP agent asks the flavour's readiness.
	edge := as[appsv1.Deployment](t, objs, "Deployment", "router-edge").Spec.Template.Spec
	if !edge.HostNetwork || edge.Containers[0].Ports[0].ContainerPort != 80 ||
		!slices.Contains(edge.Containers[0].Args, "--http=:80") {
		t.Errorf("edge's router: %+v", edge.Containers[0])
	}
	if a := edge.Containers[1]; a.Name != "vip-agent" ||
		!slices.Contains(a.Args, "--router-url=http://127.0.0.1:9901/readyz") {
		t.Errorf("VIP agent: %s %v", a.Name, a.Args)
	}

	// The Traefik shard's objects and the cluster-wide ones are as without the other flavour's
	// shards (only the users' ConfigMap, which lists every shard, differs).
	alone := twoFlavours(t, traefik)
	for _, want := range alone {
		if want.GetName() == names.UserInfoName {
			continue
		}
		i := slices.IndexFunc(objs, func(o *unstructured.Unstructured) bool {
			return o.GetKind() == want.GetKind() && o.GetNamespace() == want.GetNamespace() && o.GetName() == want.GetName()
		})
		if i < 0 || !reflect.DeepEqual(objs[i].Object, want.Object) {
			t.Errorf("%s %s changed when shards of another flavour came", want.GetKind(), want.GetName())
		}
	}
}

// TestFlavoursKeepApart: every registered flavour, the built-in ones and a fake, has a name, class
// and class controller of its own (classes are how flavours share a cluster), serves behind a
// Service on unprivileged ports distinct from each other, and ships its role.
func TestFlavoursKeepApart(t *testing.T) {
	flavourtest.Use(t)
	seen := map[string]string{}
	roles := map[string]bool{}
	for _, r := range render.RouterClusterRoles() {
		roles[r.Name] = true
	}
	for _, f := range render.Flavours() {
		class := f.IngressClass()
		for _, k := range []string{"name " + string(f.Name()), "class " + class.Name, "controller " + class.Controller} {
			if other, ok := seen[k]; ok {
				t.Errorf("%s and %s share the %s", f.Name(), other, k)
			}
			seen[k] = string(f.Name())
		}
		p := f.Ports()
		// Unprivileged and distinct: the router runs without capabilities behind a Service.
		if p.HTTP <= 1024 || p.HTTPS <= 1024 || p.Admin <= 1024 || p.HTTP == p.HTTPS || p.HTTP == p.Admin || p.HTTPS == p.Admin {
			t.Errorf("%s: ports %+v", f.Name(), p)
		}
		for _, e := range []render.HTTPGet{f.Health(), f.Readiness(), {Path: f.Canary().Path, Port: f.Canary().Port}} {
			if !strings.HasPrefix(e.Path, "/") || e.Port == 0 {
				t.Errorf("%s: endpoint %+v", f.Name(), e)
			}
		}
		if !roles[f.ClusterRole().Name] {
			t.Errorf("%s: role %s is not among the router roles (config/user-cluster/rbac.yaml)", f.Name(), f.ClusterRole().Name)
		}
	}
	fakeFirst := v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "x", Flavour: flavourtest.Name}, {Name: "default"}})
	if render.DefaultIngressClass(fakeFirst) != flavourtest.Class {
		t.Error("the default class is not the first shard's flavour's")
	}
}
