package clusteraccess

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/watchcache"
)

// Routes, namespaces, IngressClaims and RoutedIPs are written by tenants and cluster owners, who
// decide how many there are and how large: the cache keeps of each only what Shardgate reads,
// so that annotations it never reads (kubectl's last-applied configuration, other controllers'
// settings, anything a tenant chooses to put there) cost nothing. What is dropped is never
// written back: the allocation controller patches only the fields it changes (see
// pkg/controller/allocation/write.go), the claims and routed-IP controllers patch status.
// Shardgate's own objects (in its namespace, its namespace) stay whole: the shards controller
// compares them with what it renders. Each route kind trims its own (routekinds.Kind.Cached).

// TrimNamespace keeps of a namespace its identity and labels (shards' namespaceSelectors).
func TrimNamespace(obj any) (any, error) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok || ns.Name == names.Namespace {
		return obj, nil
	}
	return &corev1.Namespace{ObjectMeta: watchcache.TrimMeta(ns.ObjectMeta, nil)}, nil
}

// TrimIngressClaim keeps of a claim its identity, labels, spec and status: no annotation is read.
func TrimIngressClaim(obj any) (any, error) {
	c, ok := obj.(*v1alpha1.IngressClaim)
	if !ok {
		return obj, nil
	}
	return &v1alpha1.IngressClaim{ObjectMeta: watchcache.TrimMeta(c.ObjectMeta, nil), Spec: c.Spec, Status: c.Status}, nil
}

// TrimRoutedIP keeps of a RoutedIP its identity, labels, spec and status: no annotation is read.
func TrimRoutedIP(obj any) (any, error) {
	r, ok := obj.(*v1alpha1.RoutedIP)
	if !ok {
		return obj, nil
	}
	return &v1alpha1.RoutedIP{ObjectMeta: watchcache.TrimMeta(r.ObjectMeta, nil), Spec: r.Spec, Status: r.Status}, nil
}
