package clusteraccess

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/ingressclass"
	"github.com/shardgate/shardgate/pkg/names"
)

// The route kinds, IngressClaims and RoutedIPs are written by tenants and cluster owners, who
// decide how many there are and how large: the cache keeps of each only what Shardgate reads,
// so that annotations it never reads (kubectl's last-applied configuration, other controllers'
// settings, anything a tenant chooses to put there) cost nothing. What is dropped is never
// written back: the allocation controller patches only the fields it changes (see
// pkg/controller/allocation/write.go), the claims and routed-IP controllers patch status.
// Shardgate's own objects (in its namespace, its namespace, its IngressClass) stay whole: the
// shards controller compares them with what it renders.

// ingressAnnotations are the Ingress annotations read: Shardgate's allocation and the legacy
// class annotation (which class an Ingress is).
var ingressAnnotations = append([]string{ingressclass.LegacyClassAnnotation}, v1alpha1.AllocationAnnotations...)

// ingressClassAnnotations are the IngressClass annotations read: which class is the default,
// and whether Shardgate made it so.
var ingressClassAnnotations = []string{ingressclass.DefaultClassAnnotation, ingressclass.DefaultClassMarker}

// TrimIngress keeps of a user's Ingress its identity, labels (route selectors match them), the
// annotations read (ingressAnnotations), spec (rules, class, default backend) and status (the
// addresses allocation clears on a rejected one).
func TrimIngress(obj any) (any, error) {
	ing, ok := obj.(*networkingv1.Ingress)
	if !ok || ing.Namespace == names.Namespace {
		return obj, nil
	}
	return &networkingv1.Ingress{ObjectMeta: trimMeta(ing.ObjectMeta, ingressAnnotations), Spec: ing.Spec, Status: ing.Status}, nil
}

// TrimNamespace keeps of a namespace its identity and labels (shards' namespaceSelectors).
func TrimNamespace(obj any) (any, error) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok || ns.Name == names.Namespace {
		return obj, nil
	}
	return &corev1.Namespace{ObjectMeta: trimMeta(ns.ObjectMeta, nil)}, nil
}

// TrimIngressClass keeps of another controller's IngressClass its identity, labels and the
// default-class annotations (which class is the cluster's default).
func TrimIngressClass(obj any) (any, error) {
	c, ok := obj.(*networkingv1.IngressClass)
	if !ok || c.Name == names.IngressClassName {
		return obj, nil
	}
	return &networkingv1.IngressClass{ObjectMeta: trimMeta(c.ObjectMeta, ingressClassAnnotations)}, nil
}

// TrimIngressClaim keeps of a claim its identity, labels, spec and status: no annotation is read.
func TrimIngressClaim(obj any) (any, error) {
	c, ok := obj.(*v1alpha1.IngressClaim)
	if !ok {
		return obj, nil
	}
	return &v1alpha1.IngressClaim{ObjectMeta: trimMeta(c.ObjectMeta, nil), Spec: c.Spec, Status: c.Status}, nil
}

// TrimRoutedIP keeps of a RoutedIP its identity, labels, spec and status: no annotation is read.
func TrimRoutedIP(obj any) (any, error) {
	r, ok := obj.(*v1alpha1.RoutedIP)
	if !ok {
		return obj, nil
	}
	return &v1alpha1.RoutedIP{ObjectMeta: trimMeta(r.ObjectMeta, nil), Spec: r.Spec, Status: r.Status}, nil
}

// trimMeta keeps an object's identity, version, times, labels and the annotations named in keep;
// owner references, finalizers and managedFields go.
func trimMeta(m metav1.ObjectMeta, keep []string) metav1.ObjectMeta {
	out := metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Generation: m.Generation, CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp, Labels: m.Labels}
	for _, k := range keep {
		if v, ok := m.Annotations[k]; ok {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[k] = v
		}
	}
	return out
}
