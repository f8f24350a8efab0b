package shards

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/gatewayapi"
	"github.com/shardgate/shardgate/pkg/listenersets"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// allocatedHTTPRoute is an HTTPRoute of ns that allocation gave host on shard.
func allocatedHTTPRoute(ns, name, host, shard string) *gatewayv1.HTTPRoute {
	return &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{v1alpha1.ShardLabel: shard},
		Annotations: map[string]string{v1alpha1.AllocationAnnotation: v1alpha1.AllocationAllocated,
			v1alpha1.HostsAnnotation: host}},
		Spec: gatewayv1.HTTPRouteSpec{Hostnames: []gatewayv1.Hostname{gatewayv1.Hostname(host)}}}
}

// gatewayCluster is a shard reconciler and a ClusterIngress whose user cluster serves Gateway API
// (installed by Shardgate) and HTTPRoutes, holding objs.
func gatewayCluster(t *testing.T, objs ...client.Object) (*Reconciler, types.NamespacedName, *clusteraccess.FakeCluster) {
	seed := controllertest.Seed(t)
	ns := controllertest.Namespace(t, seed.Client)
	access := clusteraccess.NewFake()
	r := &Reconciler{Client: seed.Client, Access: access, Board: cistatus.NewBoard(seed.Client).WriteThrough()}
	key := newCI(t, seed.Client, ns)
	user := controllertest.UserCluster(access, key, objs...)
	user.Routes = routekinds.Registry{routekinds.Ingress{}, routekinds.HTTPRoute{}}
	user.Caps = clusteraccess.Capabilities{AdmissionPolicy: true, Version: "v1.37",
		GatewayAPI: gatewayapi.Decide(gatewayapi.Input{Enabled: true}).Availability}
	return r, key, user
}

func tenantSet(ns, name, host, secret string) *gatewayv1.ListenerSet {
	return &gatewayv1.ListenerSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1},
		Spec: gatewayv1.ListenerSetSpec{ParentRef: gatewayv1.ParentGatewayReference{Name: names.ParentGatewayName,
			Namespace: ptr.To(gatewayv1.Namespace(names.Namespace))},
			Listeners: []gatewayv1.ListenerEntry{{Name: "https", Hostname: ptr.To(gatewayv1.Hostname(host)), Port: 443,
				Protocol: gatewayv1.HTTPSProtocolType, TLS: &gatewayv1.ListenerTLSConfig{
					CertificateRefs: []gatewayv1.SecretObjectReference{{Name: gatewayv1.ObjectName(secret)}}}}}}}
}

// TestTenantListenersReachTheirShardsGateway: a ListenerSet for a host its namespace holds is
// merged into the Gateway of the host's shard, its Secret granted to that Gateway in its own
// namespace, and it is told Programmed; one for a host another namespace holds is told Conflicted
// and reaches no Gateway; removing the ListenerSet takes its listener and grant away.
func TestTenantListenersReachTheirShardsGateway(t *testing.T) {
	r, key, user := gatewayCluster(t, allocatedHTTPRoute("team-a", "shop", "shop.a.example", v1alpha1.DefaultShardName),
		tenantSet("team-a", "shop", "shop.a.example", "shop-tls"),
		tenantSet("team-b", "takes", "shop.a.example", "theirs"))
	controllertest.Reconcile(t, r, key, 2)
	ctx := context.Background()

	gw := &gatewayv1.Gateway{}
	if err := user.Client.Get(ctx, client.ObjectKey{Namespace: names.Namespace,
		Name: names.ShardGatewayName(v1alpha1.DefaultShardName)}, gw); err != nil {
		t.Fatal(err)
	}
	var tenant []gatewayv1.Listener
	for _, l := range gw.Spec.Listeners {
		if string(l.Name) != render.ListenerHTTP && string(l.Name) != render.ListenerHTTPS {
			tenant = append(tenant, l)
		}
	}
	if len(tenant) != 1 || string(tenant[0].Name) != listenersets.ListenerName("team-a", "shop", "https") ||
		string(*tenant[0].Hostname) != "shop.a.example" || string(*tenant[0].TLS.CertificateRefs[0].Namespace) != "team-a" {
		t.Fatalf("tenant listeners on the shard's Gateway: %+v, want team-a's only", tenant)
	}
	grant := &gatewayv1beta1.ReferenceGrant{}
	if err := user.Client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: render.ListenerGrantName}, grant); err != nil {
		t.Fatalf("team-a's grant: %v", err)
	}
	if len(grant.Spec.To) != 1 || string(*grant.Spec.To[0].Name) != "shop-tls" || grant.Spec.From[0].Namespace != names.Namespace {
		t.Errorf("team-a's grant %+v, want Gateways of %s reading shop-tls only", grant.Spec, names.Namespace)
	}
	if err := user.Client.Get(ctx, client.ObjectKey{Namespace: "team-b", Name: render.ListenerGrantName},
		&gatewayv1beta1.ReferenceGrant{}); !apierrors.IsNotFound(err) {
		t.Errorf("team-b got a grant: %v", err)
	}
	a, b := &gatewayv1.ListenerSet{}, &gatewayv1.ListenerSet{}
	must(t, user.Client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "shop"}, a))
	must(t, user.Client.Get(ctx, client.ObjectKey{Namespace: "team-b", Name: "takes"}, b))
	if c := meta.FindStatusCondition(a.Status.Conditions, "Programmed"); c == nil || c.Status != metav1.ConditionTrue ||
		c.LastTransitionTime.IsZero() {
		t.Errorf("team-a's ListenerSet status %+v, want Programmed", a.Status)
	}
	if len(b.Status.Listeners) != 1 || !meta.IsStatusConditionTrue(b.Status.Listeners[0].Conditions, "Conflicted") {
		t.Errorf("team-b's ListenerSet status %+v, want its listener Conflicted", b.Status)
	}

	must(t, user.Client.Delete(ctx, a))
	controllertest.Reconcile(t, r, key, 1)
	must(t, user.Client.Get(ctx, client.ObjectKeyFromObject(gw), gw))
	if len(gw.Spec.Listeners) > 2 {
		t.Errorf("the shard's Gateway kept %d listeners after the ListenerSet went", len(gw.Spec.Listeners))
	}
	if err := user.Client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: render.ListenerGrantName},
		&gatewayv1beta1.ReferenceGrant{}); !apierrors.IsNotFound(err) {
		t.Errorf("team-a's grant outlived its ListenerSet: %v", err)
	}
}

// TestUnreadableListenerSetsChangeNothing: while the ListenerSets cannot be read, nothing is
// applied or pruned, so a tenant's listener is never rendered away because of a failed read.
func TestUnreadableListenerSetsChangeNothing(t *testing.T) {
	r, key, user := gatewayCluster(t, allocatedHTTPRoute("team-a", "shop", "shop.a.example", v1alpha1.DefaultShardName),
		tenantSet("team-a", "shop", "shop.a.example", "shop-tls"))
	controllertest.Reconcile(t, r, key, 2)
	gwKey := client.ObjectKey{Namespace: names.Namespace, Name: names.ShardGatewayName(v1alpha1.DefaultShardName)}
	before := &gatewayv1.Gateway{}
	must(t, user.Client.Get(context.Background(), gwKey, before))
	if n := len(before.Spec.Listeners); n != 2 || string(before.Spec.Listeners[1].Name) != listenersets.ListenerName("team-a", "shop", "https") {
		t.Fatalf("the Gateway's listeners %+v, want its HTTP one (no TLS) and the tenant's", before.Spec.Listeners)
	}

	healthy := user.Client.(client.WithWatch)
	user.Client = interceptorClient(healthy, func(list client.ObjectList) error {
		if _, ok := list.(*gatewayv1.ListenerSetList); ok {
			return errors.New("connection refused")
		}
		return nil
	})
	if _, err := r.Reconcile(context.Background(), controllertest.Request(key)); err == nil {
		t.Fatal("a pass that could not read the ListenerSets reported no error")
	}
	after := &gatewayv1.Gateway{}
	must(t, healthy.Get(context.Background(), gwKey, after))
	if len(after.Spec.Listeners) != 2 || after.ResourceVersion != before.ResourceVersion {
		t.Errorf("the Gateway changed while the ListenerSets could not be read: %d listeners", len(after.Spec.Listeners))
	}
}

// interceptorClient is c with its lists failing where fail says so.
func interceptorClient(c client.WithWatch, fail func(client.ObjectList) error) client.WithWatch {
	return interceptor.NewClient(c, interceptor.Funcs{
		List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if err := fail(list); err != nil {
				return err
			}
			return cl.List(ctx, list, opts...)
		}})
}
