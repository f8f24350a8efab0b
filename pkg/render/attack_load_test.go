package render

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
)

// TestAttackLoadRouterMayRewriteEveryLeaseOfShardgateSystem: a shard that reports load binds its
// routers' ServiceAccount to shardgate-router-load in shardgate-system, which grants get/create/
// update on every Lease there, by no name; the token is mounted in the Traefik container too
// (it serves the Internet and tenants' routes). So a router of a plain (non-VIP) load shard gains
// the power to rewrite any other shard's load reports and every VIP shard's node reports
// (vip-<shard>-node-<node>, what VIP placement is decided from), which it never had before.
func TestAttackLoadRouterMayRewriteEveryLeaseOfShardgateSystem(t *testing.T) {
	s := v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "edge", Publishing: v1alpha1.PublishLoadBalancer,
		Load: &v1alpha1.ShardLoadSpec{}}})[0]
	objs, err := RenderShard(Traefik{}, RenderInput{Domain: "edge.c1.example.test", Shard: s, DNSTTL: 60})
	if err != nil {
		t.Fatal(err)
	}
	pod := as[appsv1.Deployment](t, findObject(objs, "Deployment", names.RouterName("edge"))).Spec.Template.Spec
	routerHasToken := slices.ContainsFunc(pod.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == apiTokenVolume })
	b := findObject(objs, "RoleBinding", names.RouterName("edge")+"-load")
	if b == nil {
		t.Fatal("no load RoleBinding")
	}
	rb := as[rbacv1.RoleBinding](t, b)
	var role *rbacv1.ClusterRole
	for _, r := range RouterClusterRoles() {
		if r.Name == rb.RoleRef.Name {
			role = r
		}
	}
	if role == nil {
		t.Fatalf("role %s not found", rb.RoleRef.Name)
	}
	foreign := []string{names.VIPNodeLeaseName("vipshard", "node-1"), names.RouterLoadLeaseName("other", "router-other-1")}
	for _, rule := range role.Rules {
		if !slices.Contains(rule.Resources, "leases") || !slices.Contains(rule.Verbs, "update") {
			continue
		}
		for _, name := range foreign {
			if len(rule.ResourceNames) == 0 || slices.Contains(rule.ResourceNames, name) {
				t.Errorf("edge's routers (token in the Traefik container: %v) may update Lease %s/%s", routerHasToken, names.Namespace, name)
			}
		}
	}
}
