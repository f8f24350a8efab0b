package routekinds

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/allocation"
	"github.com/shardgate/shardgate/pkg/ingressclass"
	"github.com/shardgate/shardgate/pkg/names"
)

func ing(class string, rules ...string) *networkingv1.Ingress {
	i := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web"}}
	if class != "" {
		i.Spec.IngressClassName = ptr.To(class)
	}
	for _, h := range rules {
		i.Spec.Rules = append(i.Spec.Rules, networkingv1.IngressRule{Host: h})
	}
	return i
}

func lb(addresses ...networkingv1.IngressLoadBalancerIngress) networkingv1.IngressStatus {
	return networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{Ingress: addresses}}
}

var backend = networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web",
	Port: networkingv1.ServiceBackendPort{Number: 80}}}

// twoFlavours are Shardgate's classes with a second router flavour beside Traefik, the cluster's
// first shard Traefik's.
var twoFlavours = Flavours{ByIngressClass: map[string]string{"shardgate": "traefik", "shardgate-fake": "fake"},
	DefaultIngressClass: "shardgate"}

// TestIngressServes: which Ingresses are Shardgate's, by class, legacy annotation, or none while
// classless ones are (Shardgate's class is the default, or no class is and the profile allows),
// and for which flavour's routers.
func TestIngressServes(t *testing.T) {
	legacy := func(class string) *networkingv1.Ingress {
		i := ing("")
		i.Annotations = map[string]string{ingressclass.LegacyClassAnnotation: class}
		return i
	}
	defaultClass := func(name string) *networkingv1.IngressClass {
		return &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: name,
			Annotations: map[string]string{ingressclass.DefaultClassAnnotation: "true"}}}
	}
	for _, c := range []struct {
		name    string
		route   *networkingv1.Ingress
		classes []client.Object
		policy  v1alpha1.DefaultClassPolicy
		want    string // the flavour; "" not Shardgate's
	}{
		{"shardgate class", ing("shardgate"), nil, "", "traefik"},
		{"the other flavour's class", ing("shardgate-fake"), nil, "", "fake"},
		{"another class", ing("nginx"), []client.Object{defaultClass("shardgate")}, "", ""},
		{"legacy annotation, ours", legacy("shardgate"), nil, v1alpha1.DefaultClassNever, "traefik"},
		{"legacy annotation, theirs", legacy("nginx"), nil, "", ""},
		{"classless, no default class", ing(""), nil, "", "traefik"},
		{"classless, no default class, Never", ing(""), nil, v1alpha1.DefaultClassNever, ""},
		{"classless, Shardgate's class is the default", ing(""), []client.Object{defaultClass("shardgate")},
			v1alpha1.DefaultClassNever, "traefik"},
		{"classless, the other flavour's class is the default", ing(""), []client.Object{defaultClass("shardgate-fake")}, "", "fake"},
		{"classless, another default class", ing(""), []client.Object{defaultClass("nginx")}, "", ""},
	} {
		rd := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(c.classes...).Build()
		spec := &v1alpha1.ClusterIngressSpec{IngressClass: v1alpha1.IngressClassSettings{Default: c.policy}}
		serves, err := Ingress{}.Serves(context.Background(), rd, spec, twoFlavours)
		if err != nil {
			t.Fatal(err)
		}
		if flavour, ours := serves(c.route); flavour != c.want || ours != (c.want != "") {
			t.Errorf("%s: serves %v for %q, want %q", c.name, ours, flavour, c.want)
		}
	}
}

// TestIngressHostsAndStatus: one host per rule ("" where a rule has none); status.loadBalancer
// names a shard by its domain apex, and Unpublish takes exactly those entries (every one for nil).
func TestIngressHostsAndStatus(t *testing.T) {
	for _, c := range []struct {
		name  string
		route *networkingv1.Ingress
		hosts []string
	}{
		{"rules", ing("", "a.example.org", "", "b.example.org"), []string{"a.example.org", "", "b.example.org"}},
		{"default backend only", &networkingv1.Ingress{Spec: networkingv1.IngressSpec{DefaultBackend: &backend}}, nil},
	} {
		if got := (Ingress{}).Hosts(c.route); !slices.Equal(got, c.hosts) {
			t.Errorf("%s: hosts %q, want %q", c.name, got, c.hosts)
		}
	}

	edge := []Shard{{Name: "edge", Domain: "edge.c1.z"}}
	ip := networkingv1.IngressLoadBalancerIngress{IP: "192.0.2.1"}
	for _, c := range []struct {
		name      string
		status    networkingv1.IngressStatus
		shards    []Shard
		published bool
		left      []networkingv1.IngressLoadBalancerIngress
	}{
		{"none", lb(), nil, false, nil},
		{"any, all dropped", lb(ip, networkingv1.IngressLoadBalancerIngress{Hostname: "other.example.org"}), nil, true, nil},
		{"another shard's, kept", lb(networkingv1.IngressLoadBalancerIngress{Hostname: "other.c1.z"}), edge, false,
			[]networkingv1.IngressLoadBalancerIngress{{Hostname: "other.c1.z"}}},
		{"the shard's among others, dropped", lb(ip, networkingv1.IngressLoadBalancerIngress{Hostname: "edge.c1.z"}), edge,
			true, []networkingv1.IngressLoadBalancerIngress{ip}},
		{"the shard's alone, dropped to none", lb(networkingv1.IngressLoadBalancerIngress{Hostname: "edge.c1.z"}), edge,
			true, nil},
		{"no shards named", lb(networkingv1.IngressLoadBalancerIngress{Hostname: "edge.c1.z"}), []Shard{}, false,
			[]networkingv1.IngressLoadBalancerIngress{{Hostname: "edge.c1.z"}}},
	} {
		route := ing("")
		route.Status = c.status
		if got := (Ingress{}).Published(route, c.shards); got != c.published {
			t.Errorf("%s: published %v, want %v", c.name, got, c.published)
		}
		Ingress{}.Unpublish(route, c.shards)
		if got := route.Status.LoadBalancer.Ingress; !equality.Semantic.DeepEqual(got, c.left) || c.left == nil && got != nil {
			t.Errorf("%s: left %+v, want %+v", c.name, got, c.left)
		}
	}
}

// TestIngressAlreadySays guards the fast path that skips writes: it may only skip an Ingress
// that shows the whole decision.
func TestIngressAlreadySays(t *testing.T) {
	a := allocation.Allocation{Shard: "edge", Domain: "edge.c1.z", Hosts: []string{"web-ns.edge.c1.z"}}
	done := func() *networkingv1.Ingress {
		i := ing("", "web-ns.edge.c1.z")
		i.Labels = map[string]string{v1alpha1.ShardLabel: "edge"}
		i.Annotations = map[string]string{v1alpha1.AllocationAnnotation: v1alpha1.AllocationAllocated,
			v1alpha1.ShardAnnotation: "edge", v1alpha1.HostsAnnotation: "web-ns.edge.c1.z"}
		i.Status = lb(networkingv1.IngressLoadBalancerIngress{Hostname: "edge.c1.z"})
		return i
	}
	if !(Ingress{}).AlreadySays(done(), a) {
		t.Fatal("a fully written decision must be skipped")
	}
	for name, mutate := range map[string]func(*networkingv1.Ingress){
		"label missing":      func(i *networkingv1.Ingress) { delete(i.Labels, v1alpha1.ShardLabel) },
		"other shard":        func(i *networkingv1.Ingress) { i.Labels[v1alpha1.ShardLabel] = "default" },
		"no allocation yet":  func(i *networkingv1.Ingress) { delete(i.Annotations, v1alpha1.AllocationAnnotation) },
		"hosts differ":       func(i *networkingv1.Ingress) { i.Annotations[v1alpha1.HostsAnnotation] = "x" },
		"stale cname target": func(i *networkingv1.Ingress) { i.Annotations[v1alpha1.CNAMETargetAnnotation] = "old" },
		"default host unset": func(i *networkingv1.Ingress) { i.Spec.Rules[0].Host = "" },
		"hosts prefix only":  func(i *networkingv1.Ingress) { i.Annotations[v1alpha1.HostsAnnotation] = "web-ns.edge.c1.z,more" },
		"default backend without its rule": func(i *networkingv1.Ingress) {
			i.Spec.Rules = nil
			i.Spec.DefaultBackend = &backend
		},
	} {
		i := done()
		mutate(i)
		if (Ingress{}).AlreadySays(i, a) {
			t.Errorf("%s: skipped although the Ingress does not show the decision", name)
		}
	}
	rej := allocation.Allocation{Rejected: true, Reason: "wildcard host *.x is not allowed"}
	i := ing("")
	i.Annotations = map[string]string{v1alpha1.AllocationAnnotation: "Rejected: wildcard host *.x is not allowed"}
	if !(Ingress{}).AlreadySays(i, rej) {
		t.Error("a written rejection must be skipped")
	}
	i.Labels = map[string]string{v1alpha1.ShardLabel: "edge"}
	if (Ingress{}).AlreadySays(i, rej) {
		t.Error("a rejected Ingress still labelled for a shard must be rewritten")
	}
	i.Labels = nil
	i.Status = lb(networkingv1.IngressLoadBalancerIngress{Hostname: "edge.c1.z"})
	if (Ingress{}).AlreadySays(i, rej) {
		t.Error("a rejected Ingress still showing a shard's address must be rewritten")
	}
}

// TestIngressTell: what an Ingress is made to say, one case a row: the decision in labels and
// annotations, default hosts in hostless rules, a rule for an Ingress that has only a default
// backend, a default host rewritten when the Ingress moved, a host the user wrote never
// touched, and a rejection that takes the shard away.
func TestIngressTell(t *testing.T) {
	label, _ := names.DefaultHostLabel("team", "web")
	allocated := allocation.Allocation{Shard: "edge", Domain: "edge.c1.z", Hosts: []string{"web-ns.edge.c1.z", "shop.example.org"},
		CNAMETarget: "edge.c1.z"}
	onlyBackend := ing("")
	onlyBackend.Spec.DefaultBackend = &backend
	for _, c := range []struct {
		name  string
		route *networkingv1.Ingress
		a     allocation.Allocation
		rules []string
		check func(*networkingv1.Ingress) bool
	}{
		{"default host into the hostless rule, custom host kept", ing("", "", "shop.example.org"), allocated,
			[]string{"web-ns.edge.c1.z", "shop.example.org"}, func(w *networkingv1.Ingress) bool {
				return w.Labels[v1alpha1.ShardLabel] == "edge" && w.Annotations[v1alpha1.CNAMETargetAnnotation] == "edge.c1.z" &&
					w.Annotations[v1alpha1.HostsAnnotation] == "web-ns.edge.c1.z,shop.example.org"
			}},
		{"default backend only: a rule under its default host", onlyBackend,
			allocation.Allocation{Shard: "edge", Domain: "edge.c1.z", Hosts: []string{"web-ns.edge.c1.z"}},
			[]string{"web-ns.edge.c1.z"}, func(w *networkingv1.Ingress) bool {
				p := w.Spec.Rules[0].HTTP.Paths[0]
				return p.Path == "/" && *p.PathType == networkingv1.PathTypePrefix && p.Backend.Service.Name == "web"
			}},
		{"moved: its old default host rewritten, the user's kept", ing("", label+".c1.z.test", "shop.example.org"),
			allocation.Allocation{Shard: "mine-team", Domain: "mine-team.c1.z.test",
				Hosts: []string{label + ".mine-team.c1.z.test", "shop.example.org"}, CNAMETarget: "mine-team.c1.z.test"},
			[]string{label + ".mine-team.c1.z.test", "shop.example.org"}, nil},
		{"rejected: the shard goes, the rules stay", ing("", ""), allocation.Allocation{Rejected: true, Reason: "host taken"},
			[]string{""}, func(w *networkingv1.Ingress) bool {
				return w.Labels[v1alpha1.ShardLabel] == "" && w.Annotations[v1alpha1.AllocationAnnotation] == "Rejected: host taken"
			}},
	} {
		before := c.route.DeepCopy()
		got, changed := Ingress{}.Tell(c.route, c.a)
		w := got.(*networkingv1.Ingress)
		var rules []string
		for _, r := range w.Spec.Rules {
			rules = append(rules, r.Host)
		}
		if !changed || !slices.Equal(rules, c.rules) || c.check != nil && !c.check(w) {
			t.Errorf("%s: changed %v, rules %q, %+v", c.name, changed, rules, w.ObjectMeta)
		}
		if !equality.Semantic.DeepEqual(before, c.route) {
			t.Errorf("%s: Tell changed its input", c.name)
		}
		if _, again := (Ingress{}).Tell(w, c.a); again {
			t.Errorf("%s: telling the same decision twice must change nothing", c.name)
		}
		if !c.a.Rejected && !(Ingress{}).AlreadySays(w, c.a) {
			t.Errorf("%s: what Tell wrote is not what AlreadySays skips", c.name)
		}
	}
}

// bloated is what a tenant can put on an Ingress: a 200 KiB last-applied configuration, other
// tools' annotations, managedFields, owners and finalizers.
func bloated(ns, name string, keep map[string]string) metav1.ObjectMeta {
	ann := map[string]string{"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("x", 200<<10),
		"example.com/notes": strings.Repeat("y", 100<<10), "shardgate.io/anything-else": "z"}
	for k, v := range keep {
		ann[k] = v
	}
	return metav1.ObjectMeta{Namespace: ns, Name: name, UID: "u1", ResourceVersion: "7", Generation: 3,
		Labels: map[string]string{"app": "shop", v1alpha1.ShardLabel: "default"}, Annotations: ann,
		ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		OwnerReferences: []metav1.OwnerReference{{Name: "owner"}}, Finalizers: []string{"example.com/f"}}
}

// TestIngressCacheTrims: an Ingress loses every annotation Shardgate does not read,
// managedFields, owners and finalizers, and keeps identity, labels, the annotations read
// (allocation, legacy class), spec and status: a half-megabyte Ingress is cached in under a
// kilobyte and decides as before. IngressClasses keep the default-class marks. Shardgate's own
// (its canaries, its class) stay whole: they are compared with what is rendered.
func TestIngressCacheTrims(t *testing.T) {
	cached := Ingress{}.Cached()
	if len(cached) != 2 || cached[1].Rendered != true || !cached[1].ClusterScoped || cached[0].ClusterScoped {
		t.Fatalf("cached %+v", cached)
	}
	trimIng, trimClass := cached[0].Transform, cached[1].Transform
	read := map[string]string{v1alpha1.AllocationAnnotation: v1alpha1.AllocationAllocated, v1alpha1.ShardAnnotation: "default",
		v1alpha1.HostsAnnotation: "a.c1.example.org", v1alpha1.CNAMETargetAnnotation: "c1.example.org",
		ingressclass.LegacyClassAnnotation: "other"}
	in := &networkingv1.Ingress{ObjectMeta: bloated("team", "shop", read), Spec: ing("", "a.c1.example.org").Spec,
		Status: lb(networkingv1.IngressLoadBalancerIngress{Hostname: "c1.example.org"})}
	out, _ := trimIng(in.DeepCopy())
	got := out.(*networkingv1.Ingress)
	if !equality.Semantic.DeepEqual(got.Annotations, read) || got.Name != "shop" || got.UID != "u1" || got.Generation != 3 ||
		!equality.Semantic.DeepEqual(got.Labels, in.Labels) || !equality.Semantic.DeepEqual(got.Spec, in.Spec) ||
		!equality.Semantic.DeepEqual(got.Status, in.Status) {
		t.Errorf("trimmed to %+v", got)
	}
	if got.ManagedFields != nil || got.OwnerReferences != nil || got.Finalizers != nil {
		t.Errorf("managedFields, owners or finalizers kept: %+v", got.ObjectMeta)
	}
	if b, _ := json.Marshal(got); len(b) > 1<<10 {
		t.Errorf("trimmed Ingress is %d bytes", len(b))
	}
	defaults := map[string]string{ingressclass.DefaultClassAnnotation: "true"}
	out, _ = trimClass(&networkingv1.IngressClass{ObjectMeta: bloated("", "nginx", defaults)})
	if c := out.(*networkingv1.IngressClass); !equality.Semantic.DeepEqual(c.Annotations, defaults) || c.Name != "nginx" {
		t.Errorf("IngressClass annotations %v", c.Annotations)
	}
	canary := &networkingv1.Ingress{ObjectMeta: bloated(names.Namespace, "canary-default", nil)}
	// Any of Shardgate's classes (one per router flavour), told by its label.
	ownClass := &networkingv1.IngressClass{ObjectMeta: bloated("", "shardgate-another-flavour", nil)}
	ownClass.Labels[v1alpha1.ManagedByLabel] = v1alpha1.ManagedByValue
	if out, _ := trimIng(canary); out != any(canary) {
		t.Error("Shardgate's canary was trimmed")
	}
	if out, _ := trimClass(ownClass); out != any(ownClass) {
		t.Error("Shardgate's IngressClass was trimmed")
	}
}

// TestIngressCanaryAndProtection: the canary Ingress is of the shard's flavour's class, for
// exactly the canary's host and path, to the routers' health port; the admission policy guards
// Ingresses and their status.
func TestIngressCanaryAndProtection(t *testing.T) {
	meta := metav1.ObjectMeta{Namespace: names.Namespace, Name: "canary", Labels: map[string]string{"l": "v"}}
	route := Ingress{}.CanaryRoute(Canary{Meta: meta, Host: "shardgate-canary.edge.c1.z", Path: "/ping", Service: "canary",
		Port: "ping", IngressClass: names.IngressClassName})
	i := route.(*networkingv1.Ingress)
	r := i.Spec.Rules[0]
	p := r.HTTP.Paths[0]
	if !equality.Semantic.DeepEqual(i.ObjectMeta, meta) || *i.Spec.IngressClassName != names.IngressClassName ||
		r.Host != "shardgate-canary.edge.c1.z" || p.Path != "/ping" || *p.PathType != networkingv1.PathTypeExact ||
		p.Backend.Service.Name != "canary" || p.Backend.Service.Port.Name != "ping" {
		t.Errorf("canary %+v", i)
	}
	if got := (Ingress{}).Protected(); !slices.Equal(got, []string{"ingresses", "ingresses/status"}) {
		t.Errorf("protected %q", got)
	}
}

// TestIngressServedElsewhere: only a class naming another controller says so by itself.
func TestIngressServedElsewhere(t *testing.T) {
	for class, want := range map[string]string{
		"nginx":     "its ingressClassName is nginx, not shardgate or shardgate-fake: another controller serves it",
		"shardgate": "", "shardgate-fake": "", "": "",
	} {
		if got := (Ingress{}).ServedElsewhere(ing(class), twoFlavours); got != want {
			t.Errorf("class %q: %q, want %q", class, got, want)
		}
	}
}

// TestRegistryByResource: kubectl's names for a kind, in any case, qualified or not.
func TestRegistryByResource(t *testing.T) {
	r := Registry{Ingress{}}
	for name, found := range map[string]bool{"ingress": true, "Ingresses": true, "ing": true, "ingresses.networking.k8s.io": true,
		"ingress.networking.k8s.io": true, "ing.networking.k8s.io": true, "ingresses.example.com": false, "svc": false} {
		if got := r.ByResource(name) != nil; got != found {
			t.Errorf("%q: found %v", name, got)
		}
	}
	if r.For("Ingress") == nil || r.For("HTTPRoute") != nil {
		t.Error("For")
	}
	if c, ok := r.CachedFor(&networkingv1.IngressClass{}); !ok || !c.Rendered {
		t.Error("CachedFor(IngressClass)")
	}
}

// TestIngressRefusal: a default backend beside rules (the shared routers' catch-all) and a path
// with whitespace or a control character (a row of its own in line-based route maps) are refused;
// the rule Shardgate made of a default backend is not, and Tell takes that default backend away.
func TestIngressRefusal(t *testing.T) {
	backend := networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web",
		Port: networkingv1.ServiceBackendPort{Number: 80}}}
	own, _ := names.DefaultHostLabel("team", "web")
	host := own + ".c1.z"
	rule := func(path string) networkingv1.IngressRule {
		return networkingv1.IngressRule{Host: "web.c1.z", IngressRuleValue: networkingv1.IngressRuleValue{
			HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: path,
				PathType: ptr.To(networkingv1.PathTypeImplementationSpecific), Backend: backend}}}}}
	}
	for name, tc := range map[string]struct {
		spec networkingv1.IngressSpec
		why  string
	}{
		"rules":                          {networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{rule("/a")}}, ""},
		"default backend only":           {networkingv1.IngressSpec{DefaultBackend: &backend}, ""},
		"converted default backend":      {networkingv1.IngressSpec{DefaultBackend: &backend, Rules: []networkingv1.IngressRule{defaultBackendRule(host, backend)}}, ""},
		"rules and a default backend":    {networkingv1.IngressSpec{DefaultBackend: &backend, Rules: []networkingv1.IngressRule{rule("/a")}}, "spec.defaultBackend beside rules"},
		"converted rule of another host": {networkingv1.IngressSpec{DefaultBackend: &backend, Rules: []networkingv1.IngressRule{defaultBackendRule("x.c1.z", backend)}}, "spec.defaultBackend beside rules"},
		"newline in a path":              {networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{rule("/x\nvictim.c1.z/\t\tteam_web_80")}}, "a space or a control character"},
		"space in a path":                {networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{rule("/a b")}}, "a space or a control character"},
	} {
		ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web"}, Spec: tc.spec}
		if got := (Ingress{}).Refusal(ing); tc.why == "" && got != "" || tc.why != "" && !strings.Contains(got, tc.why) {
			t.Errorf("%s: refusal %q, want %q", name, got, tc.why)
		}
	}
	converted := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web"},
		Spec: networkingv1.IngressSpec{DefaultBackend: &backend, Rules: []networkingv1.IngressRule{defaultBackendRule(host, backend)}}}
	a := allocation.Allocation{Shard: "default", Domain: "c1.z", Hosts: []string{host}}
	allocation.TellMeta(converted, a)
	if !(Ingress{}).AlreadySays(converted, a) {
		t.Error("a converted Ingress on a shard whose routers share no route specs is rewritten (its default backend stays)")
	}
	a.SharesRouteSpecs = true
	allocation.TellMeta(converted, a) // every mark already there: only the default backend differs
	if (Ingress{}).AlreadySays(converted, a) {
		t.Error("a converted Ingress that kept its default backend says its allocation")
	}
	got, changed := Ingress{}.Tell(converted, a)
	if ing := got.(*networkingv1.Ingress); !changed || ing.Spec.DefaultBackend != nil || len(ing.Spec.Rules) != 1 {
		t.Errorf("Tell of a converted Ingress: %+v", ing.Spec)
	}
}
