package clusteraccess

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// TestReview37ANonGatewayParentNamedLikeTheParentKeepsTheShard (review37 finding, fails on
// purpose): the policy's "stays attached to the parent" guard (routeGuards' hasParent) takes any
// parentRef named shardgate-system/shardgate as the parent, whatever its group and kind, while
// allocation (isParent) takes only a Gateway. T swaps its allocated GRPCRoute's parent for
// {group: "", kind: Service, namespace: shardgate-system, name: shardgate} and keeps the shard's
// Gateway (Shardgate's mark): admitted (the shard refs did not change, "the parent" is there). The
// route is then not Shardgate's (Serves false): allocation releases its marks and never looks at it
// again, but its shard Gateway parentRef stays, so the shard's routers keep serving it, and T now
// edits its hostnames to another namespace's host: admitted too (shard refs unchanged). The same
// for HTTPRoutes (the guards are shared).
func TestReview37ANonGatewayParentNamedLikeTheParentKeepsTheShard(t *testing.T) {
	const shardgateUser = "shardgate-review37"
	cp := policyServer(t, shardgateUser)
	ctx := context.Background()
	c := cp.Client
	cfg := rest.CopyConfig(cp.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: shardgateUser, Groups: []string{"system:masters"}}
	sg, err := client.New(cfg, client.Options{Scheme: runtime.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	ref := func(name string) map[string]any {
		return map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "namespace": names.Namespace, "name": name}
	}
	parent, shard := ref(names.ParentGatewayName), ref(names.ShardGatewayName("default"))
	fakeParent := map[string]any{"group": "", "kind": "Service", "namespace": names.Namespace, "name": names.ParentGatewayName}
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("gateway.networking.k8s.io/v1")
	u.SetKind("GRPCRoute")
	u.SetNamespace("team")
	u.SetName("mine")
	_ = unstructured.SetNestedSlice(u.Object, []any{parent}, "spec", "parentRefs")
	_ = unstructured.SetNestedStringSlice(u.Object, []string{"team.c1.z.test"}, "spec", "hostnames")
	// Wait for the CRD and the policy (a direct attachment is refused), then T's route is created
	// and Shardgate allocates it (as its own identity).
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		probe := u.DeepCopy()
		probe.SetName("probe")
		_ = unstructured.SetNestedSlice(probe.Object, []any{shard}, "spec", "parentRefs")
		err := c.Create(ctx, probe)
		if err != nil && strings.Contains(err.Error(), "set by Shardgate") {
			break
		}
		if err == nil {
			_ = c.Delete(ctx, probe)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the policy is never enforced: %v", err)
		}
	}
	if err := c.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
		t.Fatal(err)
	}
	u.SetLabels(map[string]string{v1alpha1.ShardLabel: "default"})
	u.SetAnnotations(map[string]string{v1alpha1.AllocationAnnotation: v1alpha1.AllocationAllocated,
		v1alpha1.HostsAnnotation: "team.c1.z.test"})
	_ = unstructured.SetNestedSlice(u.Object, []any{parent, shard}, "spec", "parentRefs")
	if err := sg.Update(ctx, u); err != nil {
		t.Fatalf("Shardgate's allocation write: %v", err)
	}
	// T: the parent swapped for a Service of the same name, the shard Gateway kept.
	_ = unstructured.SetNestedSlice(u.Object, []any{fakeParent, shard}, "spec", "parentRefs")
	if err := c.Update(ctx, u); err != nil {
		t.Logf("held: the swap is refused: %v", err)
		return
	}
	// T: then another namespace's host.
	_ = unstructured.SetNestedStringSlice(u.Object, []string{"victim.c1.z.test"}, "spec", "hostnames")
	hijack := c.Update(ctx, u)
	typed := &gatewayv1.GRPCRoute{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
		t.Fatal(err)
	}
	serves, err := (routekinds.GRPCRoute{}).Serves(ctx, nil, &v1alpha1.ClusterIngressSpec{}, routekinds.Flavours{})
	if err != nil {
		t.Fatal(err)
	}
	_, ours := serves(typed)
	t.Errorf("T swapped its GRPCRoute's parent for a Service named %s/%s and kept shard Gateway %s: admitted; "+
		"allocation now takes it as not Shardgate's (Serves %v: released, never detached), and T's edit to host "+
		"victim.c1.z.test is refused: %v (nil: admitted, served by the shard's routers)",
		names.Namespace, names.ParentGatewayName, names.ShardGatewayName("default"), ours, hijack)
}
