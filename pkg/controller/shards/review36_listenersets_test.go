package shards

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	"github.com/shardgate/shardgate/pkg/routekinds"
	"github.com/shardgate/shardgate/test/framework"
)

func review36Caps() clusteraccess.Capabilities {
	return clusteraccess.Capabilities{AdmissionPolicy: true, Version: "v1.37",
		GatewayAPI: gatewayapi.Decide(gatewayapi.Input{Enabled: true}).Availability}
}

// TestReview36SeventeenSecretsBlockEveryShard: tenant T (edit in team-a) holds one host by an
// HTTPRoute of its own and attaches a ListenerSet whose one HTTPS listener names 17 Secrets of
// its own namespace (a listener may name 64). Shardgate renders one ReferenceGrant for team-a
// naming all 17, but the ReferenceGrant CRD allows at most 16 `to` entries: the API server
// refuses it. The grant is a cluster-wide object (render.RenderDesired appends ListenerGrants to
// d.Cluster), and a cluster-wide object that fails stops the pass (applyDesired): no shard object
// of the cluster is applied any more, for every tenant (no router, no Gateway, no renewal of the
// cluster's certificate, no other tenant's listener). Real API server with the pinned CRDs.
func TestReview36SeventeenSecretsBlockEveryShard(t *testing.T) {
	ctx := context.Background()
	seed := controllertest.Seed(t)
	userCP := framework.StartControlPlane(t, "user", framework.ControlPlaneOptions{})
	if err := framework.InstallGatewayAPI(ctx, userCP); err != nil {
		t.Fatal(err)
	}
	uc, err := client.New(userCP.Config, client.Options{Scheme: clusteraccess.UserClusterScheme()})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"team-a", "team-b"} {
		must(t, uc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}))
	}
	parent := []gatewayv1.ParentReference{{Name: names.ParentGatewayName, Namespace: ptr.To(gatewayv1.Namespace(names.Namespace))}}
	// team-b: an innocent tenant with one host and its certificate.
	b := allocatedHTTPRoute("team-b", "web", "web.b.example", v1alpha1.DefaultShardName)
	b.Spec.ParentRefs = parent
	must(t, uc.Create(ctx, b))
	must(t, uc.Create(ctx, tenantSet("team-b", "web", "web.b.example", "web-tls")))
	// team-a: the attacker, one host of its own, 17 Secret names on one listener.
	a := allocatedHTTPRoute("team-a", "shop", "shop.a.example", v1alpha1.DefaultShardName)
	a.Spec.ParentRefs = parent
	must(t, uc.Create(ctx, a))
	evil := tenantSet("team-a", "shop", "shop.a.example", "c0")
	for i := 1; i < 17; i++ {
		evil.Spec.Listeners[0].TLS.CertificateRefs = append(evil.Spec.Listeners[0].TLS.CertificateRefs,
			gatewayv1.SecretObjectReference{Name: gatewayv1.ObjectName(fmt.Sprintf("c%d", i))})
	}
	must(t, uc.Create(ctx, evil))

	ns := controllertest.Namespace(t, seed.Client)
	access := clusteraccess.NewFake()
	r := &Reconciler{Client: seed.Client, Access: access, Board: cistatus.NewBoard(seed.Client)}
	key := newCI(t, seed.Client, ns)
	// Shardgate is the identity it writes as: its admission policy exempts only that one.
	review := &authenticationv1.SelfSubjectReview{}
	must(t, uc.Create(ctx, review))
	access.Add(key, &clusteraccess.FakeCluster{Client: tlsSecretOnly{uc}, Caps: review36Caps(), User: review.Status.UserInfo.Username,
		Routes: routekinds.Registry{routekinds.Ingress{}, routekinds.HTTPRoute{}}})
	var lastErr error
	for i := 0; i < 2; i++ {
		_, lastErr = r.Reconcile(ctx, controllertest.Request(key))
	}
	if lastErr != nil {
		t.Errorf("one tenant's ListenerSet failed the whole pass: %v", lastErr)
	}
	if !exists(t, uc, &appsv1.Deployment{}, client.ObjectKey{Namespace: names.Namespace, Name: names.RouterName(v1alpha1.DefaultShardName)}) {
		t.Error("the default shard's router was never deployed: one tenant's ListenerSet blocks every shard of the cluster")
	}
	gw := &gatewayv1.Gateway{}
	if !exists(t, uc, gw, client.ObjectKey{Namespace: names.Namespace, Name: names.ShardGatewayName(v1alpha1.DefaultShardName)}) {
		t.Fatal("the default shard's Gateway was never applied, so team-b's listener is not served either")
	}
	found := false
	for _, l := range gw.Spec.Listeners {
		found = found || string(l.Name) == listenersets.ListenerName("team-b", "web", "https")
	}
	if !found {
		t.Error("team-b's listener is not on the shard's Gateway")
	}
}

// TestReview36TenantsOwnReferenceGrantIsRewrittenAndPruned: a tenant's own ReferenceGrant that
// happens to be named shardgate-listenersets (say it lets HTTPRoutes of namespace frontend reach
// its Service api) is force-applied over (spec.from and spec.to are atomic lists: replaced),
// labelled managed-by, and deleted once the namespace's listeners go. Shardgate "recognises its
// own objects by the managed-by label in shardgate-system only" (docs/security.md), yet here it
// takes over and deletes an object it never created in a tenant's namespace.
func TestReview36TenantsOwnReferenceGrantIsRewrittenAndPruned(t *testing.T) {
	mine := &gatewayv1beta1.ReferenceGrant{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "shardgate-listenersets"},
		Spec: gatewayv1beta1.ReferenceGrantSpec{
			From: []gatewayv1beta1.ReferenceGrantFrom{{Group: gatewayv1.GroupName, Kind: "HTTPRoute", Namespace: "frontend"}},
			To:   []gatewayv1beta1.ReferenceGrantTo{{Group: "", Kind: "Service", Name: ptr.To(gatewayv1.ObjectName("api"))}}}}
	set := tenantSet("team-a", "shop", "shop.a.example", "shop-tls")
	r, key, user := gatewayCluster(t,
		allocatedHTTPRoute("team-a", "shop", "shop.a.example", v1alpha1.DefaultShardName), set, mine)
	controllertest.Reconcile(t, r, key, 2)
	ctx := context.Background()
	got := &gatewayv1beta1.ReferenceGrant{}
	must(t, user.Client.Get(ctx, client.ObjectKeyFromObject(mine), got))
	kept := false
	for _, f := range got.Spec.From {
		kept = kept || f.Kind == "HTTPRoute" && f.Namespace == "frontend"
	}
	if !kept {
		t.Errorf("the tenant's own ReferenceGrant was rewritten: %+v", got.Spec)
	}
	must(t, user.Client.Delete(ctx, set))
	controllertest.Reconcile(t, r, key, 1)
	if err := user.Client.Get(ctx, client.ObjectKeyFromObject(mine), got); apierrors.IsNotFound(err) {
		t.Error("the tenant's own ReferenceGrant was deleted (pruned) once its ListenerSet went")
	}
}

// TestReview36ListenerOnAFailedShardIsToldProgrammed: when the shard's objects could not be
// applied (here the API server refuses the shard's Gateway), tellListenerSets still runs and
// tells the listener Programmed=True: the comment says "Told once what they ask for is applied",
// but a failed shard (len(failed) > 0) is not applied.
func TestReview36ListenerOnAFailedShardIsToldProgrammed(t *testing.T) {
	r, key, user := gatewayCluster(t, allocatedHTTPRoute("team-a", "shop", "shop.a.example", v1alpha1.DefaultShardName),
		tenantSet("team-a", "shop", "shop.a.example", "shop-tls"))
	healthy := user.Client.(client.WithWatch)
	user.Client = interceptor.NewClient(healthy, interceptor.Funcs{
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			if u, ok := obj.(interface {
				GetKind() string
				GetName() string
			}); ok && u.GetKind() == "Gateway" && u.GetName() == names.ShardGatewayName(v1alpha1.DefaultShardName) {
				return apierrors.NewInvalid(schema.GroupKind{Group: gatewayv1.GroupName, Kind: "Gateway"}, u.GetName(), nil)
			}
			return c.Apply(ctx, obj, opts...)
		}})
	for i := 0; i < 2; i++ {
		_, _ = r.Reconcile(context.Background(), controllertest.Request(key))
	}
	if exists(t, healthy, &gatewayv1.Gateway{}, client.ObjectKey{Namespace: names.Namespace,
		Name: names.ShardGatewayName(v1alpha1.DefaultShardName)}) {
		t.Fatal("test setup: the shard's Gateway was applied")
	}
	s := &gatewayv1.ListenerSet{}
	must(t, healthy.Get(context.Background(), client.ObjectKey{Namespace: "team-a", Name: "shop"}, s))
	if meta.IsStatusConditionTrue(s.Status.Conditions, "Programmed") {
		t.Errorf("the ListenerSet is told Programmed although its shard's Gateway was refused: %+v", s.Status.Conditions)
	}
}

// TestReview36MissingSecretToldResolved: Shardgate reads no Secret, yet tells an HTTPS listener
// ResolvedRefs=True and Programmed=True from its own render alone. The router (Traefik) skips a
// listener whose certificate it cannot resolve and says so in the shard Gateway's
// status.listeners; Shardgate never reads that, so a tenant whose Secret is missing (or not a
// kubernetes.io/tls Secret) is told everything is served while HTTPS for its host is not.
func TestReview36MissingSecretToldResolved(t *testing.T) {
	seed := controllertest.Seed(t)
	ns := controllertest.Namespace(t, seed.Client)
	access := clusteraccess.NewFake()
	r := &Reconciler{Client: seed.Client, Access: access, Board: cistatus.NewBoard(seed.Client).WriteThrough()}
	key := newCI(t, seed.Client, ns)
	user := controllertest.UserCluster(access, key,
		allocatedHTTPRoute("team-a", "shop", "shop.a.example", v1alpha1.DefaultShardName),
		tenantSet("team-a", "shop", "shop.a.example", "no-such-secret"))
	user.Routes = routekinds.Registry{routekinds.Ingress{}, routekinds.HTTPRoute{}}
	user.Caps = review36Caps()
	controllertest.Reconcile(t, r, key, 2)
	ctx := context.Background()
	// The router reports what it did with the listener, as Traefik does.
	gw := &gatewayv1.Gateway{}
	must(t, user.Client.Get(ctx, client.ObjectKey{Namespace: names.Namespace, Name: names.ShardGatewayName(v1alpha1.DefaultShardName)}, gw))
	name := listenersets.ListenerName("team-a", "shop", "https")
	gw.Status.Listeners = []gatewayv1.ListenerStatus{{Name: gatewayv1.SectionName(name),
		SupportedKinds: []gatewayv1.RouteGroupKind{{Kind: "HTTPRoute"}},
		Conditions: []metav1.Condition{
			{Type: "ResolvedRefs", Status: metav1.ConditionFalse, Reason: "InvalidCertificateRef", LastTransitionTime: metav1.Now()},
			{Type: "Programmed", Status: metav1.ConditionFalse, Reason: "Invalid", LastTransitionTime: metav1.Now()}}}}
	must(t, user.Client.Update(ctx, gw))
	controllertest.Reconcile(t, r, key, 1)
	s := &gatewayv1.ListenerSet{}
	must(t, user.Client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "shop"}, s))
	if len(s.Status.Listeners) != 1 || meta.IsStatusConditionTrue(s.Status.Listeners[0].Conditions, "ResolvedRefs") ||
		meta.IsStatusConditionTrue(s.Status.Conditions, "Programmed") {
		t.Errorf("a listener whose Secret does not exist (the router says InvalidCertificateRef) is told resolved and programmed: %+v", s.Status)
	}
}
