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
// allocation annotations.
func CarriesAllocation(route metav1.Object) bool {
	if _, ok := route.GetLabels()[v1alpha1.ShardLabel]; ok {
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
	if a.Rejected {
		_, labelled := labels[v1alpha1.ShardLabel]
		return !labelled && ann[v1alpha1.AllocationAnnotation] == v1alpha1.AllocationRejected+": "+a.Reason
	}
	return labels[v1alpha1.ShardLabel] == a.Shard && ann[v1alpha1.AllocationAnnotation] == v1alpha1.AllocationAllocated &&
		ann[v1alpha1.ShardAnnotation] == a.Shard && ann[v1alpha1.CNAMETargetAnnotation] == a.CNAMETarget &&
		ann[v1alpha1.ShardClassAnnotation] == a.RouteClass &&
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
