package render

import rbacv1 "k8s.io/api/rbac/v1"

// RouterClusterRoles are the ClusterRoles the routers are bound to, exactly as Shardgate renders
// them: every registered flavour's, the VIP agent's and the load reporter's. config/user-cluster/rbac.yaml ships the
// same roles for the cluster admin to create, so that Shardgate needs only `bind` on them
// (TestUserClusterRoleShipsTheRouterRoles keeps the two equal).
func RouterClusterRoles() []*rbacv1.ClusterRole {
	var out []*rbacv1.ClusterRole
	for _, f := range Flavours() {
		out = append(out, routerRole(f))
		if g := f.GatewayClusterRole(); g != nil {
			out = append(out, labelledRole(g))
		}
	}
	return append(out, vipRole(), loadRole())
}
