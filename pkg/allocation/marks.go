package allocation

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// The marks Shardgate writes on a route of any kind to tell its owner a decision: the shard
// label and the allocation annotations, and how to take them back. The hosts it fills in are
// the kind's spec, and its adapter's (pkg/routekinds). Pure functions on a route's metadata;
// the functions that change it change the object given (callers pass a copy).

// CarriesAllocation reports whether the route has Shardgate's shard label or any of its
// allocation annotations, or an ingress.class annotation naming a shard's routers.
func CarriesAllocation(route metav1.Object) bool {
	if _, ok := route.GetLabels()[v1alpha1.ShardLabel]; ok {
		return true
	}
	if len(foreignShardClasses(route.GetAnnotations())) > 0 {
		return true
	}
	for _, k := range v1alpha1.AllocationAnnotations {
		if _, ok := route.GetAnnotations()[k]; ok {
			return true
		}
	}
	return false
}

// Untell removes Shardgate's shard label and allocation annotations from route. The hosts it
// was given stay: they are part of the user's route now.
func Untell(route metav1.Object) {
	labels, ann := route.GetLabels(), route.GetAnnotations()
	delete(labels, v1alpha1.ShardLabel)
	for _, k := range v1alpha1.AllocationAnnotations {
		delete(ann, k)
	}
	for _, k := range foreignShardClasses(ann) {
		delete(ann, k)
	}
}

// IsClassAnnotation reports whether annotation key k is an ingress.class under any prefix or none,
// as routers that select by class annotation read it (they strip the prefix).
func IsClassAnnotation(k string) bool {
	return k == "ingress.class" || strings.HasSuffix(k, "/ingress.class")
}

// ClassAnnotated reports whether the route has an ingress.class annotation, under any prefix, of
// its own (not Shardgate's): routers that select by class annotation would read it beside
// Shardgate's.
func ClassAnnotated(route metav1.Object) bool {
	for k := range route.GetAnnotations() {
		if k != v1alpha1.ShardClassAnnotation && IsClassAnnotation(k) {
			return true
		}
	}
	return false
}

// foreignShardClasses are the route's ingress.class annotations under another prefix than
// Shardgate's whose value names a shard's routers: only Shardgate may write one (the admission
// policy), so one there was set before the policy refused it, and Shardgate takes it away.
func foreignShardClasses(ann map[string]string) []string {
	var out []string
	for k, v := range ann {
		if k != v1alpha1.ShardClassAnnotation && IsClassAnnotation(k) && strings.HasPrefix(v, v1alpha1.ShardClassPrefix) {
			out = append(out, k)
		}
	}
	return out
}

// TellMeta makes route's labels and annotations say decision a.
func TellMeta(route metav1.Object, a Allocation) {
	labels, ann := route.GetLabels(), route.GetAnnotations()
	if labels == nil {
		labels = map[string]string{}
		route.SetLabels(labels)
	}
	if ann == nil {
		ann = map[string]string{}
		route.SetAnnotations(ann)
	}
	for _, k := range foreignShardClasses(ann) {
		delete(ann, k)
	}
	outcome := v1alpha1.AllocationAllocated
	if a.Rejected {
		outcome = v1alpha1.AllocationRejected + ": " + a.Reason
		delete(labels, v1alpha1.ShardLabel)
		for _, k := range v1alpha1.AllocationAnnotations {
			delete(ann, k) // the outcome is set below
		}
	} else {
		labels[v1alpha1.ShardLabel] = a.Shard
		ann[v1alpha1.ShardAnnotation] = a.Shard
		ann[v1alpha1.HostsAnnotation] = strings.Join(a.Hosts, ",")
		setOrDelete(ann, v1alpha1.CNAMETargetAnnotation, a.CNAMETarget)
		setOrDelete(ann, v1alpha1.ShardClassAnnotation, a.RouteClass)
		setOrDelete(ann, v1alpha1.KeptForAnnotation, a.KeptFor)
	}
	ann[v1alpha1.AllocationAnnotation] = outcome
}

// setOrDelete sets ann[k] to v, or removes k when v is "".
func setOrDelete(ann map[string]string, k, v string) {
	if v != "" {
		ann[k] = v
	} else {
		delete(ann, k)
	}
}

// MetaSays reports, without copying, whether route's labels and annotations already say
// decision a.
func MetaSays(route metav1.Object, a Allocation) bool {
	labels, ann := route.GetLabels(), route.GetAnnotations()
	if len(foreignShardClasses(ann)) > 0 {
		return false
	}
	if a.Rejected {
		_, labelled := labels[v1alpha1.ShardLabel]
		return !labelled && ann[v1alpha1.AllocationAnnotation] == v1alpha1.AllocationRejected+": "+a.Reason
	}
	return labels[v1alpha1.ShardLabel] == a.Shard && ann[v1alpha1.AllocationAnnotation] == v1alpha1.AllocationAllocated &&
		ann[v1alpha1.ShardAnnotation] == a.Shard && ann[v1alpha1.CNAMETargetAnnotation] == a.CNAMETarget &&
		ann[v1alpha1.ShardClassAnnotation] == a.RouteClass && ann[v1alpha1.KeptForAnnotation] == a.KeptFor &&
		joinedEquals(ann[v1alpha1.HostsAnnotation], a.Hosts)
}

// Held is what route's marks say Shardgate allocated it before: its shard and the hosts it holds
// (empty unless Shardgate's own allocation annotation says Allocated; a shard label without it
// is not one).
func Held(route metav1.Object) (shard string, hosts []string) {
	ann := route.GetAnnotations()
	if ann[v1alpha1.AllocationAnnotation] != v1alpha1.AllocationAllocated {
		return "", nil
	}
	if h := ann[v1alpha1.HostsAnnotation]; h != "" {
		hosts = strings.Split(h, ",")
	}
	return route.GetLabels()[v1alpha1.ShardLabel], hosts
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
