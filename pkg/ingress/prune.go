package ingress

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// prunable is a per-shard kind a removed shard leaves behind, as the typed list the user-cluster
// cache serves. Shared objects (namespace, IngressClass, ClusterRole) stay while any shard exists,
// which is always.
type prunable struct {
	kind string
	list func() client.ObjectList
}

var prunableKinds = []prunable{
	{"Deployment", func() client.ObjectList { return &appsv1.DeploymentList{} }},
	{"Service", func() client.ObjectList { return &corev1.ServiceList{} }},
	{"ServiceAccount", func() client.ObjectList { return &corev1.ServiceAccountList{} }},
	{"PodDisruptionBudget", func() client.ObjectList { return &policyv1.PodDisruptionBudgetList{} }},
	{"ClusterRoleBinding", func() client.ObjectList { return &rbacv1.ClusterRoleBindingList{} }},
}
