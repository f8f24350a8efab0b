package allocation

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/routekinds"
	"github.com/shardgate/shardgate/pkg/routerload"
)

// TestLeastUtilizedForEveryKind: with LeastUtilized, a new Ingress and a new HTTPRoute go to the
// shard whose routers report the most headroom (b at 10%, not a at 90%, which routes per router
// and names would pick), read from the report Leases in the user cluster's cache.
func TestLeastUtilizedForEveryKind(t *testing.T) {
	ctx := context.Background()
	kinds := routekinds.Registry{routekinds.Ingress{}, routekinds.HTTPRoute{}}
	now := metav1.NewMicroTime(time.Now())
	objs := []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}},
		ingress("team", "web", names.IngressClassName, ""),
		&gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "api"},
			Spec: gatewayv1.HTTPRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{
				Namespace: ptr.To(gatewayv1.Namespace(names.Namespace)), Name: names.ParentGatewayName}}}}}}
	for shard, rps := range map[string]string{"a": "rps=9", "b": "rps=1"} {
		pod := "router-" + shard + "-1"
		objs = append(objs, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: names.Namespace, Name: names.RouterName(shard)},
			Status: appsv1.DeploymentStatus{ReadyReplicas: 1}},
			&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: names.Namespace, Name: names.RouterLoadLeaseName(shard, pod),
				Labels: names.RouterSelector(shard), Annotations: map[string]string{routerload.ReportAnnotation: rps}},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(pod), LeaseDurationSeconds: ptr.To[int32](30), RenewTime: &now}})
	}
	load := &v1alpha1.ShardLoadSpec{RequestsPerSecond: ptr.To[int32](10)}
	r, key, u := newKindsReconciler(t, []v1alpha1.ShardSpec{{Name: "a", Load: load}, {Name: "b", Load: load}},
		v1alpha1.AllocationSettings{Strategy: v1alpha1.StrategyLeastUtilized}, kinds, objs...)
	controllertest.Reconcile(t, r, key, 2)

	web, api := &networkingv1.Ingress{}, &gatewayv1.HTTPRoute{}
	must(t, u.Get(ctx, client.ObjectKey{Namespace: "team", Name: "web"}, web))
	must(t, u.Get(ctx, client.ObjectKey{Namespace: "team", Name: "api"}, api))
	if web.Labels[v1alpha1.ShardLabel] != "b" || api.Labels[v1alpha1.ShardLabel] != "b" {
		t.Errorf("Ingress on %q, HTTPRoute on %q; want both on b (10%% against a's 90%%)",
			web.Labels[v1alpha1.ShardLabel], api.Labels[v1alpha1.ShardLabel])
	}
}
