package routekinds

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/allocation"
	"github.com/shardgate/shardgate/pkg/ingressclass"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/watchcache"
)

// Ingress is the networking.k8s.io/v1 Ingress: Shardgate's if its class is one of its flavours'
// (or it names none while one of Shardgate's classes is the default; pkg/ingressclass), one host
// per rule, the default host filled into a hostless rule, the address in status.loadBalancer.
type Ingress struct{}

var _ Kind = Ingress{}

// Name implements Kind.
func (Ingress) Name() string { return "Ingress" }

// GroupVersionKind implements Kind.
func (Ingress) GroupVersionKind() schema.GroupVersionKind {
	return networkingv1.SchemeGroupVersion.WithKind("Ingress")
}

// Resource implements Kind.
func (Ingress) Resource() string { return "ingresses" }

// ShortNames implements Kind.
func (Ingress) ShortNames() []string { return []string{"ing"} }

// AddToScheme implements Kind: Ingresses are client-go's, in every user-cluster scheme already.
func (Ingress) AddToScheme(*runtime.Scheme) error { return nil }

// New implements Kind.
func (Ingress) New() client.Object { return &networkingv1.Ingress{} }

// NewList implements Kind.
func (Ingress) NewList() client.ObjectList { return &networkingv1.IngressList{} }

// Items implements Kind.
func (Ingress) Items(list client.ObjectList) []client.Object {
	return objects(list.(*networkingv1.IngressList).Items)
}

// Cached implements Kind: every Ingress is a route to allocate, and every IngressClass counts for
// which class is the cluster's default (there are only a few). Shardgate applies its own class,
// so a change to it is drift to repair too.
func (Ingress) Cached() []Cached {
	return []Cached{
		{Object: &networkingv1.Ingress{}, Transform: trimIngress},
		{Object: &networkingv1.IngressClass{}, Transform: trimIngressClass, ClusterScoped: true, Rendered: true},
	}
}

// ingressAnnotations are the Ingress annotations read: Shardgate's allocation and the legacy
// class annotation (which class an Ingress is).
var ingressAnnotations = append([]string{ingressclass.LegacyClassAnnotation}, v1alpha1.AllocationAnnotations...)

// ingressClassAnnotations are the IngressClass annotations read: which class is the default,
// and whether Shardgate made it so.
var ingressClassAnnotations = []string{ingressclass.DefaultClassAnnotation, ingressclass.DefaultClassMarker}

// trimIngress keeps of a user's Ingress its identity, labels (route selectors match them), the
// annotations read (ingressAnnotations), spec (rules, class, default backend) and status (the
// addresses allocation clears on a rejected one). Shardgate's canaries stay whole.
func trimIngress(obj any) (any, error) {
	ing, ok := obj.(*networkingv1.Ingress)
	if !ok || ing.Namespace == names.Namespace {
		return obj, nil
	}
	meta := watchcache.TrimMeta(ing.ObjectMeta, ingressAnnotations)
	// Every ingress.class under any prefix: routers that select by class annotation read them all
	// (allocation.ClassAnnotated), and one naming a shard's routers is Shardgate's to take away.
	// And the first (by name) of what a flavour's routers read as configuration every route
	// shares, without its value: allocation refuses a route carrying one on such a shard
	// (allocation.Shard.ReadsAnnotations), and one is enough to say why.
	shared := ""
	for k, v := range ing.Annotations {
		if allocation.IsClassAnnotation(k) {
			if meta.Annotations == nil {
				meta.Annotations = map[string]string{}
			}
			meta.Annotations[k] = v
		} else if readAsSharedConfig(k) && (shared == "" || k < shared) {
			shared = k
		}
	}
	if shared != "" {
		if meta.Annotations == nil {
			meta.Annotations = map[string]string{}
		}
		meta.Annotations[shared] = ""
	}
	return &networkingv1.Ingress{ObjectMeta: meta, Spec: ing.Spec, Status: ing.Status}, nil
}

// trimIngressClass keeps of another controller's IngressClass its identity, labels and the
// default-class annotations (which class is the cluster's default). Shardgate's classes, one per
// router flavour, are told by their label: there is no list of them to keep in step here.
func trimIngressClass(obj any) (any, error) {
	c, ok := obj.(*networkingv1.IngressClass)
	if !ok || c.Labels[v1alpha1.ManagedByLabel] == v1alpha1.ManagedByValue {
		return obj, nil
	}
	return &networkingv1.IngressClass{ObjectMeta: watchcache.TrimMeta(c.ObjectMeta, ingressClassAnnotations)}, nil
}

// Serves implements Kind: an Ingress of one of Shardgate's classes (by spec.ingressClassName,
// else by the legacy annotation), for that class's flavour, or of none while classless Ingresses
// are Shardgate's, for the default class's.
func (Ingress) Serves(ctx context.Context, rd client.Reader, spec *v1alpha1.ClusterIngressSpec, flavours Flavours,
) (func(client.Object) (string, bool), error) {
	classes := &networkingv1.IngressClassList{}
	if err := rd.List(ctx, classes); err != nil {
		return nil, err
	}
	ours := slices.Sorted(maps.Keys(flavours.ByIngressClass))
	classless := ingressclass.ClasslessClass(classes.Items, ours, flavours.DefaultIngressClass,
		v1alpha1.ResolveIngressClass(spec.IngressClass).Default)
	return func(route client.Object) (string, bool) {
		c := ingressclass.ClassOf(route.(*networkingv1.Ingress), ours, classless)
		return flavours.ByIngressClass[c], c != ""
	}, nil
}

// ServedElsewhere implements Kind.
func (Ingress) ServedElsewhere(route client.Object, flavours Flavours) string {
	ing := route.(*networkingv1.Ingress)
	if c := ptr.Deref(ing.Spec.IngressClassName, ""); c != "" && flavours.ByIngressClass[c] == "" {
		ours := slices.Sorted(maps.Keys(flavours.ByIngressClass))
		return "its ingressClassName is " + c + ", not " + strings.Join(ours, " or ") + ": another controller serves it"
	}
	return ""
}

// ClaimBinds implements Kind: a claim names Ingresses.
func (Ingress) ClaimBinds(c v1alpha1.ClaimRecord) []string { return c.Ingresses }

// Hosts implements Kind: one per rule. An Ingress with only a default backend has none, and gets
// one default host like any hostless rule.
func (Ingress) Hosts(route client.Object) []string {
	ing := route.(*networkingv1.Ingress)
	var hosts []string
	for _, r := range ing.Spec.Rules {
		hosts = append(hosts, r.Host)
	}
	return hosts
}

// Refusal implements Kind, for routers that share route specs (render.TenantGuards). A default
// backend beside rules is the routers' catch-all: it would receive every request they route
// nowhere, other tenants' hosts included (HAProxy makes it the shared frontends' default_backend);
// one Shardgate turned into a rule (defaultBackendRule) is Shardgate's own, and Tell takes it
// away. A path with a space or a control character, or too long, would be a line of its own in a router's
// line-based route maps (HAProxy's): a row for another tenant's host.
func (i Ingress) Refusal(route client.Object) string {
	ing := route.(*networkingv1.Ingress)
	if ing.Spec.DefaultBackend != nil && len(ing.Spec.Rules) > 0 && !convertedDefaultBackend(ing) {
		return "spec.defaultBackend beside rules would receive every request the shard's routers route nowhere, " +
			"other tenants' hosts included; serve it from a rule"
	}
	for _, r := range ing.Spec.Rules {
		if r.HTTP == nil {
			continue
		}
		for _, p := range r.HTTP.Paths {
			if why := unsharablePath(p.Path); why != "" {
				return why
			}
		}
	}
	return ""
}

// MaxSharedPathLength is the longest path routers that share route specs take, in characters:
// HAProxy reads a route-map row in a buffer of 16 KiB (tune.bufsize), and a longer row goes on
// as a line of its own, a row the path's owner wrote. The admission policy has the same bound.
const MaxSharedPathLength = 1024

// unsharablePath is why path cannot go into a line-based route map ("" when it can): too long, or
// with an ASCII space or control character (what the admission policy refuses too; HAProxy's maps
// split on spaces, tabs and line ends, and nothing above ASCII).
func unsharablePath(path string) string {
	if utf8.RuneCountInString(path) > MaxSharedPathLength {
		return fmt.Sprintf("path of %d characters is longer than %d", utf8.RuneCountInString(path), MaxSharedPathLength)
	}
	if strings.ContainsFunc(path, func(c rune) bool { return c <= ' ' || c == 0x7f }) {
		return fmt.Sprintf("path %q has a space or a control character", path)
	}
	return ""
}

// convertedDefaultBackend reports whether ing's one rule is the one Shardgate gave an Ingress that
// had only a default backend (defaultBackendRule under its default host), before Tell also took
// the default backend away.
func convertedDefaultBackend(ing *networkingv1.Ingress) bool {
	if len(ing.Spec.Rules) != 1 || ing.Spec.DefaultBackend == nil {
		return false
	}
	own, _ := names.DefaultHostLabel(ing.Namespace, ing.Name)
	r := ing.Spec.Rules[0]
	return strings.HasPrefix(r.Host, own+".") &&
		equality.Semantic.DeepEqual(r, defaultBackendRule(r.Host, *ing.Spec.DefaultBackend))
}

// Tell implements Kind: besides the marks, an allocated Ingress gets its default hosts in its
// hostless rules, and one with only a default backend a rule under its default host (on routers
// that share route specs instead of it: a default backend is their catch-all, Refusal).
func (Ingress) Tell(route client.Object, a allocation.Allocation) (client.Object, bool) {
	ing := route.(*networkingv1.Ingress)
	want := ing.DeepCopy()
	allocation.TellMeta(want, a)
	if !a.Rejected {
		own, _ := names.DefaultHostLabel(ing.Namespace, ing.Name)
		for i := range want.Spec.Rules {
			h := want.Spec.Rules[i].Host
			if i < len(a.Hosts) && (h == "" || h != a.Hosts[i] && strings.HasPrefix(h, own+".")) {
				// The default host, or the one given before the Ingress moved to another
				// shard's domain (a claim bound it, its shard went, the zone changed).
				want.Spec.Rules[i].Host = a.Hosts[i]
			}
		}
		converted := convertedDefaultBackend(want)
		if len(want.Spec.Rules) == 0 && want.Spec.DefaultBackend != nil && len(a.Hosts) == 1 {
			want.Spec.Rules = []networkingv1.IngressRule{defaultBackendRule(a.Hosts[0], *want.Spec.DefaultBackend)}
			converted = true
		}
		if a.SharesRouteSpecs && converted {
			// The rule serves it; kept, it would be the catch-all of routers every tenant shares.
			want.Spec.DefaultBackend = nil
		}
	}
	changed := !equality.Semantic.DeepEqual(ing.Labels, want.Labels) ||
		!equality.Semantic.DeepEqual(ing.Annotations, want.Annotations) ||
		!equality.Semantic.DeepEqual(ing.Spec, want.Spec)
	return want, changed
}

// defaultBackendRule serves an Ingress that has only a default backend under its default host,
// so that it has a name like any other Ingress.
func defaultBackendRule(host string, backend networkingv1.IngressBackend) networkingv1.IngressRule {
	prefix := networkingv1.PathTypePrefix
	return networkingv1.IngressRule{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
		Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &prefix, Backend: backend}},
	}}}
}

// AlreadySays implements Kind: a rejected Ingress must also show no address any more, an
// allocated one a host in every rule (and a rule, if it had only a default backend).
func (Ingress) AlreadySays(route client.Object, a allocation.Allocation) bool {
	ing := route.(*networkingv1.Ingress)
	if !allocation.MetaSays(ing, a) {
		return false
	}
	if a.Rejected {
		return len(ing.Status.LoadBalancer.Ingress) == 0
	}
	if ing.Spec.DefaultBackend != nil && (len(ing.Spec.Rules) == 0 || a.SharesRouteSpecs) {
		return false // its default-host rule is still to be added, or its default backend taken away
	}
	for _, r := range ing.Spec.Rules {
		if r.Host == "" {
			return false
		}
	}
	return true
}

// TellStatus implements Kind: routers publish an allocated Ingress' address; Shardgate only takes
// it from a rejected one, which no router serves any more.
func (i Ingress) TellStatus(route client.Object, a allocation.Allocation) bool {
	if !a.Rejected || !i.Published(route, nil) {
		return false
	}
	i.Unpublish(route, nil)
	return true
}

// Spec implements Kind.
func (Ingress) Spec(route client.Object) any { return route.(*networkingv1.Ingress).Spec }

// Published implements Kind: status.loadBalancer.ingress, where routers publish the shard's
// domain apex as a hostname.
func (Ingress) Published(route client.Object, shards []Shard) bool {
	lb := route.(*networkingv1.Ingress).Status.LoadBalancer.Ingress
	if shards == nil {
		return len(lb) > 0
	}
	return slices.ContainsFunc(lb, func(x networkingv1.IngressLoadBalancerIngress) bool { return namesShard(x, shards) })
}

// RouterProblems implements Kind: an Ingress' routers report only that they serve it.
func (Ingress) RouterProblems(client.Object, Shard) []string { return nil }

// Unpublish implements Kind.
func (Ingress) Unpublish(route client.Object, shards []Shard) {
	ing := route.(*networkingv1.Ingress)
	if shards != nil {
		ing.Status.LoadBalancer.Ingress = slices.DeleteFunc(ing.Status.LoadBalancer.Ingress,
			func(x networkingv1.IngressLoadBalancerIngress) bool { return namesShard(x, shards) })
	}
	if shards == nil || len(ing.Status.LoadBalancer.Ingress) == 0 {
		ing.Status.LoadBalancer.Ingress = nil
	}
}

func namesShard(x networkingv1.IngressLoadBalancerIngress, shards []Shard) bool {
	return x.Hostname != "" && slices.ContainsFunc(shards, func(s Shard) bool { return s.Domain == x.Hostname })
}

// Released implements Kind: the label and annotations are an Ingress's only marks.
func (Ingress) Released(route client.Object) (client.Object, bool) { return releasedMeta(route) }

// ReleasedMessage implements Kind.
func (Ingress) ReleasedMessage() string {
	return "the Ingress is another ingress controller's now (its class): Shardgate no longer allocates it"
}

// Protected implements Kind: routers (and other ingress controllers) write Ingress status, and
// the API server keeps label and annotation changes sent through it.
func (Ingress) Protected() []string { return []string{"ingresses", "ingresses/status"} }

// Guards implements Kind: an Ingress' marks are its label and annotations only.
func (Ingress) Guards() []Guard { return nil }

// CanaryRoute implements Kind: an Ingress of the shard's flavour's class for exactly the canary's
// host and path, to the routers' health port.
func (Ingress) CanaryRoute(c Canary) client.Object {
	exact := networkingv1.PathTypeExact
	return &networkingv1.Ingress{
		ObjectMeta: c.Meta,
		Spec: networkingv1.IngressSpec{
			IngressClassName: ptr.To(c.IngressClass),
			Rules: []networkingv1.IngressRule{{Host: c.Host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{Path: c.Path, PathType: &exact, Backend: networkingv1.IngressBackend{
					Service: &networkingv1.IngressServiceBackend{Name: c.Service, Port: networkingv1.ServiceBackendPort{Name: c.Port}}}}},
			}}}},
		},
	}
}
