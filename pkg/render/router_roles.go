package render

import rbacv1 "k8s.io/api/rbac/v1"

// RouterClusterRoles are the ClusterRoles the routers are bound to, exactly as Shardgate renders
// them. config/user-cluster/rbac.yaml ships the same roles for the cluster admin to create, so
// that Shardgate needs only `bind` on them (TestUserClusterRoleShipsTheRouterRoles keeps the two
// equal).
func RouterClusterRoles() []*rbacv1.ClusterRole {
	return []*rbacv1.ClusterRole{traefikRole(), vipRole()}
}
