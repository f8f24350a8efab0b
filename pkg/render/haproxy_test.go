package render_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// TestHAProxyShardBesideTraefik: an HAProxy shard in a Traefik cluster. Its routers select their
// routes by the shard's class annotation (the controller takes no label selector), its canary
// carries that annotation, it reads the redirect from its own ConfigMap and publishes the shard's
// domain through an ExternalName Service, both labelled as the shard's; it writes only to
// emptyDirs; and the Traefik shard's objects are as without it.
func TestHAProxyShardBesideTraefik(t *testing.T) {
	traefik := v1alpha1.ShardSpec{Name: "default"}
	objs := twoFlavours(t, traefik, v1alpha1.ShardSpec{Name: "heavy", Flavour: v1alpha1.FlavourHAProxy,
		Publishing: v1alpha1.PublishNodePort, Replicas: ptr.To[int32](2)})

	if c := as[networkingv1.IngressClass](t, objs, "IngressClass", "shardgate-haproxy"); c.Spec.Controller !=
		"haproxy.org/ingress-controller/shardgate" {
		t.Errorf("HAProxy's class: controller %s", c.Spec.Controller)
	}
	pod := as[appsv1.Deployment](t, objs, "Deployment", "router-heavy").Spec.Template.Spec
	c := pod.Containers[0]
	for _, arg := range []string{"--ingress.class=shardgate-shard-heavy", "--http-bind-port=8080", "--https-bind-port=8443",
		"--configmap=shardgate-system/haproxy-heavy", "--publish-service=shardgate-system/address-heavy",
		"--default-ssl-certificate=shardgate-system/shardgate-tls", "--controller-port=0"} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("heavy's router lacks %s: %v", arg, c.Args)
		}
	}
	if c.Image != render.HAProxyImage || !reflect.DeepEqual(c.Command, []string{"/haproxy-ingress-controller"}) ||
		c.ReadinessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe.HTTPGet.Port.IntVal != 1042 {
		t.Errorf("heavy's router: %s %v, readiness %+v", c.Image, c.Command, c.ReadinessProbe.HTTPGet)
	}
	if sc := c.SecurityContext; *sc.RunAsUser == 0 || !*sc.ReadOnlyRootFilesystem || len(sc.Capabilities.Add) != 0 {
		t.Errorf("security: %+v", sc)
	}
	for _, m := range c.VolumeMounts {
		i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		if i < 0 || (pod.Volumes[i].EmptyDir == nil && !m.ReadOnly) {
			t.Errorf("mount %s at %s: a writable mount that is no emptyDir", m.Name, m.MountPath)
		}
	}

	cm := as[corev1.ConfigMap](t, objs, "ConfigMap", "haproxy-heavy")
	if cm.Data["ssl-redirect"] != "true" || cm.Data["ssl-redirect-port"] != "443" {
		t.Errorf("redirect settings: %v", cm.Data)
	}
	addr := as[corev1.Service](t, objs, "Service", "address-heavy")
	if addr.Spec.Type != corev1.ServiceTypeExternalName || addr.Spec.ExternalName != "heavy.c1.z.test" {
		t.Errorf("address Service: %+v", addr.Spec)
	}
	for _, o := range []*unstructured.Unstructured{find(objs, "ConfigMap", "haproxy-heavy"), find(objs, "Service", "address-heavy")} {
		if o.GetLabels()[v1alpha1.ShardLabel] != "heavy" || o.GetNamespace() != names.Namespace {
			t.Errorf("%s %s: labels %v in %s, want the shard's in %s", o.GetKind(), o.GetName(), o.GetLabels(),
				o.GetNamespace(), names.Namespace)
		}
	}
	canary := as[networkingv1.Ingress](t, objs, "Ingress", names.CanaryName("heavy"))
	if canary.Annotations[v1alpha1.ShardClassAnnotation] != "shardgate-shard-heavy" ||
		*canary.Spec.IngressClassName != "shardgate-haproxy" {
		t.Errorf("heavy's canary: %v %+v", canary.Annotations, canary.Spec)
	}
	if a := find(twoFlavours(t, traefik), "Ingress", names.CanaryName("default")).GetAnnotations(); len(a) != 1 {
		t.Errorf("Traefik's canary annotations %v: want only the applied hash", a)
	}

	// The admission policy now also refuses the annotations HAProxy reads, on routes and Services.
	vap := as[admissionregistrationv1.ValidatingAdmissionPolicy](t, objs, "ValidatingAdmissionPolicy", "shardgate-allocation")
	last := vap.Spec.MatchConstraints.ResourceRules[len(vap.Spec.MatchConstraints.ResourceRules)-1]
	if !slices.Contains(last.Resources, "services") ||
		!slices.ContainsFunc(vap.Spec.Validations, func(v admissionregistrationv1.Validation) bool {
			return strings.Contains(v.Expression, `"route-acl"`) && strings.Contains(v.Expression, `k.endsWith('/' + n)`)
		}) {
		t.Errorf("admission policy with an HAProxy shard: %+v", vap.Spec)
	}

	// The Traefik shard's objects and the cluster-wide ones (but the users' ConfigMap, which lists
	// every shard, and the policy) are as without it.
	alone := twoFlavours(t, traefik)
	for _, want := range alone {
		if want.GetName() == names.UserInfoName || want.GetKind() == "ValidatingAdmissionPolicy" {
			continue
		}
		if got := find(objs, want.GetKind(), want.GetName()); got == nil || !reflect.DeepEqual(got.Object, want.Object) {
			t.Errorf("%s %s changed when an HAProxy shard came", want.GetKind(), want.GetName())
		}
	}

	// Without TLS the routers name no default certificate and the ConfigMap asks no redirect.
	objs, err := render.DesiredObjects(render.DesiredInput{ClusterDomain: "c1.z.test", TTL: 60, ShardgateUser: "u",
		AdmissionPolicy: true, RouteKinds: routekinds.Registry{routekinds.Ingress{}},
		Shards: v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default", Flavour: v1alpha1.FlavourHAProxy}})})
	if err != nil {
		t.Fatal(err)
	}
	args := as[appsv1.Deployment](t, objs, "Deployment", "router-default").Spec.Template.Spec.Containers[0].Args
	if slices.ContainsFunc(args, func(a string) bool { return a == "--default-ssl-certificate=shardgate-system/shardgate-tls" }) ||
		len(as[corev1.ConfigMap](t, objs, "ConfigMap", "haproxy-default").Data) != 0 {
		t.Errorf("without TLS: %v", args)
	}
}

// TestHAProxyShardNeedsTheAdmissionPolicy: in a cluster without the ValidatingAdmissionPolicy API
// nothing would keep tenants' annotations out of HAProxy's shared configuration, so an HAProxy
// shard is not rendered there and says why; its Traefik neighbour is rendered as before.
func TestHAProxyShardNeedsTheAdmissionPolicy(t *testing.T) {
	d, err := render.RenderDesired(render.DesiredInput{ClusterDomain: "c1.z.test", TTL: 60, ShardgateUser: "u",
		RouteKinds: routekinds.Registry{routekinds.Ingress{}}, Shards: v1alpha1.ResolveShards([]v1alpha1.ShardSpec{
			{Name: "default"}, {Name: "heavy", Flavour: v1alpha1.FlavourHAProxy}})})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range d.Shards {
		switch {
		case s.Name == "heavy" && (s.Err == nil || !strings.Contains(s.Err.Error(), "no ValidatingAdmissionPolicy")):
			t.Errorf("HAProxy shard without the admission policy: %v, %d objects", s.Err, len(s.Objects))
		case s.Name == "default" && (s.Err != nil || len(s.Objects) == 0):
			t.Errorf("Traefik shard: %v, %d objects", s.Err, len(s.Objects))
		}
	}
	if find(d.All(), "IngressClass", "shardgate-haproxy") != nil {
		t.Error("HAProxy's class rendered for a shard that is not")
	}
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}
