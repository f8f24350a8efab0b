package allocation

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/allocation"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/render"
)

// TestManagedByLabelDoesNotExemptTenants (issue 28 item 2): a tenant's Ingress labelled
// shardgate.io/managed-by=shardgate is still a route: collected, checked, and refused the host
// another namespace holds. Only Shardgate's own canary in shardgate-system is skipped.
func TestManagedByLabelDoesNotExemptTenants(t *testing.T) {
	managed := map[string]string{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue}
	victim := ingress("victim", "site", names.IngressClassName, "shop.example.org")
	victim.Annotations = map[string]string{v1alpha1.AllocationAnnotation: v1alpha1.AllocationAllocated,
		v1alpha1.HostsAnnotation: "shop.example.org"}
	victim.Labels = map[string]string{v1alpha1.ShardLabel: "default"}
	victim.CreationTimestamp = metav1.Unix(100, 0)
	hijack := ingress("team", "hijack", names.IngressClassName, "shop.example.org")
	hijack.Labels = map[string]string{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue, v1alpha1.ShardLabel: "default"}
	hijack.CreationTimestamp = metav1.Unix(50, 0) // older than the holder: age must not matter
	canary := ingress(names.Namespace, names.CanaryName("default"), names.IngressClassName, "shardgate-canary.default.c1.z.test")
	canary.Labels = managed
	user := controllertest.UserCluster(clusteraccess.NewFake(), types.NamespacedName{Namespace: "seed", Name: "c1"},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "victim"}}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: names.Namespace}}, victim, hijack, canary)

	spec := &v1alpha1.ClusterIngressSpec{IngressClass: v1alpha1.IngressClassSettings{Default: v1alpha1.DefaultClassIfNoDefault}}
	_, routes, _, err := collectRoutes(context.Background(), user.Client, user.RouteKinds(), spec,
		render.RouteFlavours(v1alpha1.ResolveShards(nil)))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, r := range routes {
		keys = append(keys, r.Namespace+"/"+r.Name)
	}
	if got := strings.Join(keys, ","); !strings.Contains(got, "team/hijack") || strings.Contains(got, names.Namespace+"/") {
		t.Fatalf("routes %s: want the labelled tenant Ingress collected and Shardgate's canary skipped", got)
	}
	strategy, err := allocation.StrategyFor(v1alpha1.StrategyRoundRobin)
	if err != nil {
		t.Fatal(err)
	}
	cfg := allocation.Config{ClusterDomain: "c1.z.test", Zone: "z.test", Strategy: strategy}
	shards := []allocation.Shard{{Name: "default", Domain: "c1.z.test", Capacity: 1}}
	for _, a := range allocation.PlanAllocations(cfg, shards, routes) {
		switch a.Namespace + "/" + a.Name {
		case "team/hijack":
			if !a.Rejected || !strings.Contains(a.Reason, "shop.example.org") {
				t.Errorf("hijack: %+v, want rejected for the victim's host", a)
			}
		case "victim/site":
			if a.Rejected {
				t.Errorf("the holder lost its host: %+v", a)
			}
		}
	}
}
