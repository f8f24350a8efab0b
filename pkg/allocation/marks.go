package allocation

import (
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
)

// What Shardgate writes on an Ingress to tell its owner a decision (the shard label, the
// allocation annotations, filled-in default hosts), and how to take it back: pure functions
// the allocation controller applies.

// CarriesAllocation reports whether the Ingress has Shardgate's shard label or any of its
// allocation annotations.
func CarriesAllocation(ing *networkingv1.Ingress) bool {
	if _, ok := ing.Labels[v1alpha1.ShardLabel]; ok {
		return true
	}
	for _, k := range v1alpha1.AllocationAnnotations {
		if _, ok := ing.Annotations[k]; ok {
			return true
		}
	}
	return false
}

// Untell returns a copy of ing without Shardgate's shard label and allocation annotations. The
// hosts it was given stay: they are part of the user's Ingress now.
func Untell(ing *networkingv1.Ingress) *networkingv1.Ingress {
	want := ing.DeepCopy()
	delete(want.Labels, v1alpha1.ShardLabel)
	for _, k := range v1alpha1.AllocationAnnotations {
		delete(want.Annotations, k)
	}
	return want
}

// Tell returns a copy of ing that says decision a in its labels, annotations and rules, and
// whether any of those changed.
func Tell(ing *networkingv1.Ingress, a Allocation) (*networkingv1.Ingress, bool) {
	want := ing.DeepCopy()
	if want.Labels == nil {
		want.Labels = map[string]string{}
	}
	if want.Annotations == nil {
		want.Annotations = map[string]string{}
	}
	outcome := v1alpha1.AllocationAllocated
	if a.Rejected {
		outcome = v1alpha1.AllocationRejected + ": " + a.Reason
		delete(want.Labels, v1alpha1.ShardLabel)
		for _, k := range v1alpha1.AllocationAnnotations {
			delete(want.Annotations, k) // the outcome is set below
		}
	} else {
		want.Labels[v1alpha1.ShardLabel] = a.Shard
		want.Annotations[v1alpha1.ShardAnnotation] = a.Shard
		want.Annotations[v1alpha1.HostsAnnotation] = strings.Join(a.Hosts, ",")
		if a.CNAMETarget != "" {
			want.Annotations[v1alpha1.CNAMETargetAnnotation] = a.CNAMETarget
		} else {
			delete(want.Annotations, v1alpha1.CNAMETargetAnnotation)
		}
		own, _ := names.DefaultHostLabel(ing.Namespace, ing.Name)
		for i := range want.Spec.Rules {
			h := want.Spec.Rules[i].Host
			if i < len(a.Hosts) && (h == "" || h != a.Hosts[i] && strings.HasPrefix(h, own+".")) {
				// The default host, or the one given before the Ingress moved to another
				// shard's domain (a claim bound it, its shard went, the zone changed).
				want.Spec.Rules[i].Host = a.Hosts[i]
			}
		}
		if len(want.Spec.Rules) == 0 && want.Spec.DefaultBackend != nil && len(a.Hosts) == 1 {
			want.Spec.Rules = []networkingv1.IngressRule{defaultBackendRule(a.Hosts[0], *want.Spec.DefaultBackend)}
		}
	}
	want.Annotations[v1alpha1.AllocationAnnotation] = outcome
	changed := !equality.Semantic.DeepEqual(ing.ObjectMeta.Labels, want.Labels) ||
		!equality.Semantic.DeepEqual(ing.ObjectMeta.Annotations, want.Annotations) ||
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

// AlreadySays reports, without copying, whether the Ingress already carries decision a.
func AlreadySays(ing *networkingv1.Ingress, a Allocation) bool {
	ann := ing.Annotations
	if a.Rejected {
		_, labelled := ing.Labels[v1alpha1.ShardLabel]
		return !labelled && ann[v1alpha1.AllocationAnnotation] == v1alpha1.AllocationRejected+": "+a.Reason &&
			len(ing.Status.LoadBalancer.Ingress) == 0
	}
	if ing.Labels[v1alpha1.ShardLabel] != a.Shard || ann[v1alpha1.AllocationAnnotation] != v1alpha1.AllocationAllocated ||
		ann[v1alpha1.ShardAnnotation] != a.Shard || ann[v1alpha1.CNAMETargetAnnotation] != a.CNAMETarget ||
		!joinedEquals(ann[v1alpha1.HostsAnnotation], a.Hosts) {
		return false
	}
	if len(ing.Spec.Rules) == 0 && ing.Spec.DefaultBackend != nil {
		return false // its default-host rule is still to be added
	}
	for _, r := range ing.Spec.Rules {
		if r.Host == "" {
			return false
		}
	}
	return true
}

// joinedEquals is s == strings.Join(parts, ",") without building the joined string.
func joinedEquals(s string, parts []string) bool {
	for i, p := range parts {
		if i > 0 {
			if s == "" || s[0] != ',' {
				return false
			}
			s = s[1:]
		}
		if !strings.HasPrefix(s, p) {
			return false
		}
		s = s[len(p):]
	}
	return s == ""
}
