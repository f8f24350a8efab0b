package usercluster

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// ManagedKinds are the kinds of objects Shardgate owns in a user cluster (router pods included).
// The user-cluster cache holds only those carrying shardgate.io/managed-by=shardgate, so a
// cluster's other workloads cost nothing; any change to them wakes the controllers, which is
// how an edited or deleted router object is repaired within seconds.
func ManagedKinds() []client.Object {
	return []client.Object{
		&corev1.ServiceAccount{}, &corev1.Service{}, &corev1.ConfigMap{}, &corev1.Pod{},
		&appsv1.Deployment{}, &policyv1.PodDisruptionBudget{},
		&rbacv1.ClusterRole{}, &rbacv1.ClusterRoleBinding{},
		&networkingv1.IngressClass{},
		&admissionregistrationv1.ValidatingAdmissionPolicy{}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{},
	}
}

func managedSelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue})
}

// RouteKinds are cached whole: every Ingress is a route to allocate, and namespaces carry the
// labels shard namespaceSelectors match.
func RouteKinds() []client.Object {
	return []client.Object{&networkingv1.Ingress{}, &corev1.Namespace{}}
}

func cacheByObject() map[client.Object]cache.ByObject {
	m := map[client.Object]cache.ByObject{&corev1.Node{}: {Transform: TrimNode}}
	for _, k := range ManagedKinds() {
		m[k] = cache.ByObject{Label: managedSelector()}
	}
	for _, k := range RouteKinds() {
		m[k] = cache.ByObject{} // all of them
	}
	return m
}
