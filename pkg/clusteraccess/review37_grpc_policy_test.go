package clusteraccess

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/pkg/gatewayapi"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/pkg/routekinds"
	"github.com/shardgate/shardgate/test/framework"
)

// TestReview37GRPCRoutePolicyOnARealAPIServer (review37, held): the admission policy rendered for
// the Builtin kinds, on a real API server with the release's CRDs, refuses a tenant (anyone but
// Shardgate's identity) that attaches a GRPCRoute to a shard's Gateway on create or update, detaches
// an allocated one from the parent, writes the shard label, or writes marks through the status.
func TestReview37GRPCRoutePolicyOnARealAPIServer(t *testing.T) {
	cp := policyServer(t, "shardgate-not-the-test")
	ctx := context.Background()
	c := cp.Client
	ref := func(name string) map[string]any {
		return map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "namespace": names.Namespace, "name": name}
	}
	parent, shard := ref(names.ParentGatewayName), ref(names.ShardGatewayName("default"))
	route := func(name string, parents ...map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("gateway.networking.k8s.io/v1")
		u.SetKind("GRPCRoute")
		u.SetNamespace("team")
		u.SetName(name)
		var ps []any
		for _, p := range parents {
			ps = append(ps, p)
		}
		_ = unstructured.SetNestedSlice(u.Object, ps, "spec", "parentRefs")
		_ = unstructured.SetNestedStringSlice(u.Object, []string{"victim.example.com"}, "spec", "hostnames")
		return u
	}
	// Wait for the CRD and the policy: a direct attachment is refused.
	var err1 error
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		err1 = c.Create(ctx, route("direct", shard))
		if err1 != nil && strings.Contains(err1.Error(), "set by Shardgate") {
			break
		}
		if err1 == nil {
			_ = c.Delete(ctx, route("direct"))
		}
		if time.Now().After(deadline) {
			t.Fatalf("a GRPCRoute attached to a shard's Gateway on create is not refused: %v", err1)
		}
	}
	if err := c.Create(ctx, route("ok", parent)); err != nil {
		t.Fatal(err)
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(route("ok").GroupVersionKind())
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.Get(ctx, client.ObjectKey{Namespace: "team", Name: "ok"}, got))
	edit := got.DeepCopy()
	_ = unstructured.SetNestedSlice(edit.Object, []any{parent, shard}, "spec", "parentRefs")
	if err := c.Update(ctx, edit); err == nil {
		t.Error("a tenant adds a shard Gateway to its GRPCRoute's parentRefs by update")
	}
	patched := got.DeepCopy()
	_ = unstructured.SetNestedSlice(patched.Object, []any{map[string]any{"namespace": names.Namespace,
		"name": names.ShardGatewayName("default")}}, "spec", "parentRefs")
	if err := c.Update(ctx, patched); err == nil {
		t.Error("a tenant attaches its GRPCRoute to a shard Gateway with group and kind defaulted")
	}
	labelled := got.DeepCopy()
	labelled.SetLabels(map[string]string{"shardgate.io/shard": "default"})
	if err := c.Update(ctx, labelled); err == nil {
		t.Error("a tenant sets the shard label on its GRPCRoute")
	}
	st := got.DeepCopy()
	st.SetAnnotations(map[string]string{"shardgate.io/hosts": "victim.example.com"})
	_ = unstructured.SetNestedSlice(st.Object, []any{}, "status", "parents")
	if err := c.Status().Update(ctx, st); err == nil {
		after := &unstructured.Unstructured{}
		after.SetGroupVersionKind(got.GroupVersionKind())
		must(c.Get(ctx, client.ObjectKey{Namespace: "team", Name: "ok"}, after))
		if after.GetAnnotations()["shardgate.io/hosts"] != "" {
			t.Error("a tenant writes Shardgate's hosts annotation through grpcroutes/status")
		}
	}
}

// policyServer is a user API server with Gateway API's route CRDs, namespaces team and
// Shardgate's, and the admission policy of the built-in kinds exempting shardgateUser.
func policyServer(t *testing.T, shardgateUser string) *framework.ControlPlane {
	t.Helper()
	cp := userAPIServer(t)
	ctx := context.Background()
	c := cp.Client
	crds, err := gatewayapi.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"grpcroutes.gateway.networking.k8s.io", "httproutes.gateway.networking.k8s.io",
		"gateways.gateway.networking.k8s.io"} {
		if err := c.Create(ctx, crds[name].DeepCopy()); err != nil {
			t.Fatal(err)
		}
	}
	objs, err := render.AdmissionPolicy(shardgateUser, routekinds.Builtin(), render.TenantGuards{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("%s: %v", o.GetKind(), err)
		}
	}
	for _, ns := range []string{"team", names.Namespace} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	return cp
}
