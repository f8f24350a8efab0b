package render

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
)

// TestLoadReporter: a shard that reports load runs a reporter beside each router, reading the
// router's own metrics on the loopback, with the router's token and nothing else; its routers
// expose the metrics on the admin entry point only, and the reporters' role is bound in
// shardgate-system. A shard that does not report load renders none of it.
func TestLoadReporter(t *testing.T) {
	for _, publishing := range []v1alpha1.Publishing{v1alpha1.PublishHostNetwork, v1alpha1.PublishLoadBalancer} {
		s := v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "edge", Publishing: publishing,
			Load: &v1alpha1.ShardLoadSpec{ReporterImage: "example/agent:1"}}})[0]
		objs, err := RenderShard(Traefik{}, RenderInput{Domain: "edge.c1.example.test", Shard: s, DNSTTL: 60})
		if err != nil {
			t.Fatal(err)
		}
		pod := as[appsv1.Deployment](t, findObject(objs, "Deployment", names.RouterName("edge"))).Spec.Template.Spec
		i := slices.IndexFunc(pod.Containers, func(c corev1.Container) bool { return c.Name == loadReporterName })
		if i < 0 {
			t.Fatalf("%s: no load reporter: %+v", publishing, pod.Containers)
		}
		r, router := pod.Containers[i], pod.Containers[0]
		sc := r.SecurityContext
		if r.Image != "example/agent:1" || r.Args[0] != "load" || !slices.Contains(r.Args, "--metrics-url=http://127.0.0.1:9000/metrics") ||
			!*sc.RunAsNonRoot || *sc.RunAsUser == 0 || *sc.AllowPrivilegeEscalation || !*sc.ReadOnlyRootFilesystem ||
			!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 || len(r.Ports) > 0 {
			t.Errorf("%s: reporter %+v %+v", publishing, r, sc)
		}
		if !slices.ContainsFunc(r.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == apiTokenVolume }) {
			t.Errorf("%s: the reporter has no token to renew its Lease", publishing)
		}
		if !slices.Contains(router.Args, "--metrics.prometheus.entryPoint=traefik") {
			t.Errorf("%s: router metrics not on the admin entry point: %v", publishing, router.Args)
		}
		b := findObject(objs, "RoleBinding", names.RouterName("edge")+"-load")
		if b == nil || b.GetNamespace() != names.Namespace {
			t.Fatalf("%s: no RoleBinding in %s for the reporters", publishing, names.Namespace)
		}
		if rb := as[rbacv1.RoleBinding](t, b); rb.RoleRef.Name != loadClusterRole {
			t.Errorf("binding %+v", rb)
		}
		// Known (the attacker's review of #32): a Lease name cannot be known before the pod
		// exists, so the role names none; it grants get, create and update on Leases, in
		// shardgate-system only, and nothing else (a compromised router already reads every
		// Secret its flavour reads).
		if r := loadRole().Rules; len(r) != 1 || !slices.Equal(r[0].Resources, []string{"leases"}) ||
			!slices.Equal(r[0].Verbs, []string{"get", "create", "update"}) {
			t.Errorf("load role: %+v", r)
		}
	}
	plain := v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "edge"}})[0]
	objs, err := RenderShard(Traefik{}, RenderInput{Domain: "edge.c1.example.test", Shard: plain, DNSTTL: 60})
	if err != nil {
		t.Fatal(err)
	}
	pod := as[appsv1.Deployment](t, findObject(objs, "Deployment", names.RouterName("edge"))).Spec.Template.Spec
	if len(pod.Containers) != 1 || findObject(objs, "RoleBinding", names.RouterName("edge")+"-load") != nil ||
		slices.Contains(pod.Containers[0].Args, "--metrics.prometheus=true") {
		t.Errorf("a shard without load reporting renders it: %+v", pod.Containers)
	}
	// HAProxy routers report from HAProxy's own exporter on the stats frontend, which (with the
	// healthz one) is left out of the figures.
	h := v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "heavy", Flavour: v1alpha1.FlavourHAProxy,
		Load: &v1alpha1.ShardLoadSpec{}}})[0]
	if !ReportsLoad(HAProxy{}, h) || !ReportsLoad(Traefik{}, h) {
		t.Error("ReportsLoad: a flavour does not report")
	}
	if LoadCapacity(Traefik{}, h) != 2000 || LoadCapacity(HAProxy{}, h) != 3500 || SaturationPercent(h) != 80 {
		t.Errorf("defaults: %d %d %d", LoadCapacity(Traefik{}, h), LoadCapacity(HAProxy{}, h), SaturationPercent(h))
	}
	hobjs, err := RenderShard(HAProxy{}, RenderInput{Domain: "heavy.c1.example.test", Shard: h, DNSTTL: 60})
	if err != nil {
		t.Fatal(err)
	}
	hpod := as[appsv1.Deployment](t, findObject(hobjs, "Deployment", names.RouterName("heavy"))).Spec.Template.Spec
	if len(hpod.Containers) != 2 || !slices.Contains(hpod.Containers[1].Args, "--format=haproxy") ||
		!slices.Contains(hpod.Containers[1].Args, "--metrics-url=http://127.0.0.1:1024/metrics?scope=global&scope=frontend") ||
		!slices.Contains(hpod.Containers[1].Args, "--admin-entrypoint=stats,healthz") {
		t.Errorf("HAProxy's load reporter: %+v", hpod.Containers)
	}
	h.Load.RequestsPerSecond, h.Load.SaturationPercent = ptr.To[int32](10), ptr.To[int32](50)
	if LoadCapacity(Traefik{}, h) != 10 || SaturationPercent(h) != 50 {
		t.Error("the shard's capacity and threshold are not used")
	}
}

func findObject(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	i := slices.IndexFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == kind && o.GetName() == name })
	if i < 0 {
		return nil
	}
	return objs[i]
}
