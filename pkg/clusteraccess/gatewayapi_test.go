package clusteraccess

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/gatewayapi"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/pkg/routekinds"
	"github.com/shardgate/shardgate/pkg/routekinds/routekindstest"
	"github.com/shardgate/shardgate/pkg/watchcache"
	"github.com/shardgate/shardgate/test/framework"
)

// gatewayRoutes is a route kind for these tests only, over Gateway API's HTTPRoutes that reads
// ListenerSets too (as the HTTPRoute kind will): only its kinds (GroupVersionKind, AddToScheme,
// Cached) matter here, the rest is the Tunnel kind's and never called.
type gatewayRoutes struct{ routekindstest.Tunnels }

func (gatewayRoutes) Name() string { return "HTTPRoute" }
func (gatewayRoutes) GroupVersionKind() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: gatewayv1.GroupName, Version: "v1", Kind: "HTTPRoute"}
}
func (gatewayRoutes) AddToScheme(s *runtime.Scheme) error { return gatewayapi.AddToScheme(s) }
func (gatewayRoutes) Cached() []routekinds.Cached {
	return []routekinds.Cached{{Object: &gatewayv1.HTTPRoute{}}, {Object: &gatewayv1.ListenerSet{}}}
}

var withGatewayRoutes = routekinds.Registry{routekinds.Ingress{}, gatewayRoutes{}}

var gatewayKey = types.NamespacedName{Namespace: "default", Name: "gw"}

// engageWith engages kc's cluster as gatewayKey with these route kinds and settings, and waits
// until it is observable; the caller stops the Engager.
func engageWith(t *testing.T, kc []byte, routes routekinds.Registry, s Settings) (*Engager, Cluster) {
	t.Helper()
	e, err := NewEngager(Options{RouteKinds: routes, Log: logr.Discard(), ConnectTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	if err := e.Engage(gatewayKey, kc, s); err != nil {
		t.Fatal(err)
	}
	return e, observable(t, e)
}

// boundKubeconfig is a kubeconfig of user, bound to ClusterRole role in cp.
func boundKubeconfig(t *testing.T, cp *framework.ControlPlane, user, role string) []byte {
	t.Helper()
	if err := cp.Client.Create(context.Background(), &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}}}); err != nil {
		t.Fatal(err)
	}
	kc, err := cp.Kubeconfig(user)
	if err != nil {
		t.Fatal(err)
	}
	return kc
}

func observable(t *testing.T, e *Engager) Cluster {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		c, ok := e.Get(gatewayKey)
		if ok && c.Observable() {
			return c
		}
		if time.Now().After(deadline) {
			var st State
			if ok {
				st = c.State()
			}
			t.Fatalf("not observable within two minutes: %+v", st)
		}
	}
}

// gatewayCRDVersions are the resourceVersions of the Gateway API CRDs in the cluster, by name
// (TCPRoute's and UDPRoute's too, which Shardgate never installs).
func gatewayCRDVersions(t *testing.T, c client.Client) map[string]string {
	t.Helper()
	list := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := c.List(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, crd := range list.Items {
		if crd.Spec.Group == gatewayapi.Group {
			out[crd.Name] = crd.ResourceVersion
		}
	}
	return out
}

// settledCRDVersions is gatewayCRDVersions once the API server's own status writes of newly
// created CRDs (their conditions, a moment after they are served) are done: unchanged for two
// seconds.
func settledCRDVersions(t *testing.T, c client.Client) map[string]string {
	t.Helper()
	last, since := gatewayCRDVersions(t, c), time.Now()
	for deadline := time.Now().Add(time.Minute); time.Since(since) < 2*time.Second; time.Sleep(100 * time.Millisecond) {
		if now := gatewayCRDVersions(t, c); !maps.Equal(now, last) {
			last, since = now, time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatal("the CRDs never stopped changing")
		}
	}
	return last
}

// cachedKinds are the kinds each of a cluster's route kinds caches, by route kind.
func cachedKinds(c Cluster) map[string][]string {
	out := map[string][]string{}
	for _, k := range c.RouteKinds() {
		for _, cached := range k.Cached() {
			out[k.Name()] = append(out[k.Name()], kindName(cached.Object))
		}
	}
	return out
}

// TestGatewayAPIInstalledWhereAbsent: a cluster without Gateway API gets the release's standard
// CRDs (not TCPRoute's, UDPRoute's or the safe-upgrades policy), established, labelled and
// stamped as Shardgate's; HTTPRoutes and ListenerSets are served and cached; a second engagement
// only reads them.
func TestGatewayAPIInstalledWhereAbsent(t *testing.T) {
	cp := userAPIServer(t)
	kc, err := framework.KubeconfigFromConfig(cp.Config, "user")
	if err != nil {
		t.Fatal(err)
	}
	e, cl := engageWith(t, kc, withGatewayRoutes, Settings{GatewayAPI: true})
	a := cl.Capabilities().GatewayAPI
	if a.Reason != v1alpha1.ReasonGatewayAPIInstalled || !a.Served || !a.ListenerSet || !a.Ours || len(a.Missing) > 0 ||
		a.BundleVersion != gatewayapi.BundleVersion {
		t.Fatalf("availability %+v", a)
	}
	ctx := context.Background()
	for _, name := range gatewayapi.CRDNames() {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := cp.Client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !crdEstablished(crd) || crd.Labels[v1alpha1.ManagedByLabel] != v1alpha1.ManagedByValue ||
			crd.Annotations[render.AppliedHashAnnotation] == "" || !gatewayapi.Shardgate(crd.ObjectMeta) {
			t.Errorf("%s: established %v, labels %v, annotations %v", name, crdEstablished(crd), crd.Labels, crd.Annotations)
		}
	}
	installed := settledCRDVersions(t, cp.Client)
	got, want := slices.Sorted(maps.Keys(installed)), slices.Sorted(slices.Values(gatewayapi.CRDNames()))
	if !slices.Equal(got, want) {
		t.Fatalf("Gateway API CRDs in the cluster: %v, want exactly %v", got, want)
	}
	err = cp.Client.Get(ctx, client.ObjectKey{Name: "safe-upgrades.gateway.networking.k8s.io"},
		&admissionregistrationv1.ValidatingAdmissionPolicy{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("the safe-upgrades policy: %v, want none", err)
	}
	if got := cachedKinds(cl)["HTTPRoute"]; !slices.Equal(got, []string{"HTTPRoute", "ListenerSet"}) {
		t.Fatalf("the HTTPRoute kind caches %v", got)
	}
	if err := cl.Reader().List(ctx, &gatewayv1.ListenerSetList{}); err != nil {
		t.Fatalf("ListenerSets are not cached: %v", err)
	}
	e.Stop()

	// Engaged again: everything is Shardgate's and up to date, nothing is written.
	_, cl = engageWith(t, kc, withGatewayRoutes, Settings{GatewayAPI: true})
	if a := cl.Capabilities().GatewayAPI; a.Reason != v1alpha1.ReasonGatewayAPIInstalled {
		t.Fatalf("second engagement: %+v", a)
	}
	if again := gatewayCRDVersions(t, cp.Client); !maps.Equal(again, installed) {
		t.Fatalf("the second engagement wrote CRDs that were up to date: %v, then %v", installed, again)
	}
}

// TestForeignGatewayAPIIsUsedAsItIs: Gateway API v1.4.1's standard CRDs, installed by the
// cluster's owner, are kept byte for byte (nothing written, no CRD of the release added beside
// them); HTTPRoutes are served and cached, ListenerSets are not (ListenerSetUnavailable), and
// reading them is watchcache.ErrNotHeld, not a failed cluster.
func TestForeignGatewayAPIIsUsedAsItIs(t *testing.T) {
	cp := userAPIServer(t)
	if err := cp.InstallCRDs(filepath.Join("testdata", "gateway-api-v1.4.1")); err != nil {
		t.Fatal(err)
	}
	before := settledCRDVersions(t, cp.Client)
	if len(before) != 6 {
		t.Fatalf("v1.4.1's standard channel installed %d CRDs, want 6", len(before))
	}
	kc, err := framework.KubeconfigFromConfig(cp.Config, "user")
	if err != nil {
		t.Fatal(err)
	}
	_, cl := engageWith(t, kc, withGatewayRoutes, Settings{GatewayAPI: true})
	a := cl.Capabilities().GatewayAPI
	if a.Reason != v1alpha1.ReasonListenerSetUnavailable || !a.Served || a.ListenerSet || a.Ours || a.BundleVersion != "v1.4.1" ||
		!slices.Equal(a.Missing, []string{"ListenerSet", "TLSRoute"}) {
		t.Fatalf("availability %+v", a)
	}
	if after := gatewayCRDVersions(t, cp.Client); !maps.Equal(after, before) {
		t.Fatalf("someone else's CRDs were written or added to: %v, then %v", before, after)
	}
	if got := cachedKinds(cl)["HTTPRoute"]; !slices.Equal(got, []string{"HTTPRoute"}) {
		t.Fatalf("the HTTPRoute kind caches %v, want HTTPRoutes alone", got)
	}
	ctx := context.Background()
	route := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "r"},
		Spec: gatewayv1.HTTPRouteSpec{Hostnames: []gatewayv1.Hostname{"a.example"}}}
	w, err := client.New(cp.Config, client.Options{Scheme: cl.Writer().Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Create(ctx, route); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err := cl.Reader().Get(ctx, client.ObjectKeyFromObject(route), &gatewayv1.HTTPRoute{}); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("an HTTPRoute of the owner's v1.4.1 CRD never reached the cache")
		}
	}
	if err := cl.Reader().List(ctx, &gatewayv1.ListenerSetList{}); !errors.Is(err, watchcache.ErrNotHeld) {
		t.Fatalf("listing ListenerSets: %v, want ErrNotHeld", err)
	}
}

// TestGatewayAPIDisabledInstallsNothing: turned off, a cluster gets no Gateway API CRD and no
// Gateway API kind is cached, even one the cluster serves; turned on, the same cluster is
// re-engaged and gets them; turned off again, they stay (someone may use them) but the new
// cache watches none of their kinds.
func TestGatewayAPIDisabledInstallsNothing(t *testing.T) {
	cp := userAPIServer(t)
	kc, err := framework.KubeconfigFromConfig(cp.Config, "user")
	if err != nil {
		t.Fatal(err)
	}
	e, cl := engageWith(t, kc, withGatewayRoutes, Settings{})
	if a := cl.Capabilities().GatewayAPI; a.Reason != v1alpha1.ReasonGatewayAPIDisabled || a.Served {
		t.Fatalf("availability %+v", a)
	}
	if got := gatewayCRDVersions(t, cp.Client); len(got) > 0 {
		t.Fatalf("Gateway API CRDs installed while it is off: %v", got)
	}
	if got := cachedKinds(cl); len(got["HTTPRoute"]) > 0 {
		t.Fatalf("cached while off: %v", got)
	}

	if err := e.Engage(gatewayKey, kc, Settings{GatewayAPI: true}); err != nil {
		t.Fatal(err)
	}
	cl = waitFor(t, e, func(c Cluster) bool { return c.Capabilities().GatewayAPI.Reason == v1alpha1.ReasonGatewayAPIInstalled })
	if got := cachedKinds(cl)["HTTPRoute"]; !slices.Equal(got, []string{"HTTPRoute", "ListenerSet"}) {
		t.Fatalf("turned on: the HTTPRoute kind caches %v", got)
	}
	installed := settledCRDVersions(t, cp.Client)

	if err := e.Engage(gatewayKey, kc, Settings{}); err != nil {
		t.Fatal(err)
	}
	cl = waitFor(t, e, func(c Cluster) bool { return c.Capabilities().GatewayAPI.Reason == v1alpha1.ReasonGatewayAPIDisabled })
	if got := cachedKinds(cl); len(got["HTTPRoute"]) > 0 {
		t.Fatalf("turned off again, still cached: %v", got)
	}
	if err := cl.Reader().List(context.Background(), &gatewayv1.HTTPRouteList{}); !errors.Is(err, watchcache.ErrNotHeld) {
		t.Fatalf("listing HTTPRoutes once turned off: %v, want ErrNotHeld", err)
	}
	if after := gatewayCRDVersions(t, cp.Client); !maps.Equal(after, installed) {
		t.Fatalf("turning Gateway API off changed its CRDs: %v, then %v", installed, after)
	}
}

// waitFor waits until the engaged cluster is observable and ok.
func waitFor(t *testing.T, e *Engager, ok func(Cluster) bool) Cluster {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if c, found := e.Get(gatewayKey); found && c.Observable() && ok(c) {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatal("the re-engagement never found what it should")
		}
	}
}

// TestGatewayAPIForbidden: a role without the Gateway API CRD names (an older
// config/user-cluster/rbac.yaml) engages as before, with Shardgate's own CRDs, and says Forbidden;
// so does a role without any right on CRDs (and no CRD of Shardgate's then); nothing of Gateway
// API is installed or cached. The shipped role installs them.
func TestGatewayAPIForbidden(t *testing.T) {
	cp := userAPIServer(t)
	ctx := context.Background()
	roles, err := framework.ReadClusterRoles("config/user-cluster/rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	older := roles[0].DeepCopy()
	older.Name = "shardgate-user-cluster-without-gateway-api"
	for i, r := range older.Rules {
		older.Rules[i].ResourceNames = slices.DeleteFunc(slices.Clone(r.ResourceNames), func(n string) bool {
			return slices.Contains(gatewayapi.CRDNames(), n)
		})
	}
	none := roles[0].DeepCopy()
	none.Name = "shardgate-user-cluster-without-crds"
	none.Rules = slices.DeleteFunc(none.Rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.Resources, "customresourcedefinitions")
	})
	for _, role := range append(roles, older, none) {
		if err := cp.Client.Create(ctx, role); err != nil {
			t.Fatal(err)
		}
	}
	kubeconfig := func(user, role string) []byte { return boundKubeconfig(t, cp, user, role) }
	// The shipped role may not list HTTPRoutes yet (no HTTPRoute kind is registered): Ingresses.
	e, cl := engageWith(t, kubeconfig("older", older.Name), testRouteKinds, Settings{GatewayAPI: true})
	caps := cl.Capabilities()
	if a := caps.GatewayAPI; a.Reason != v1alpha1.ReasonGatewayAPIForbidden || a.Served {
		t.Fatalf("availability %+v", a)
	}
	if !caps.CRDs {
		t.Fatal("Shardgate's own CRDs were not installed")
	}
	if got := gatewayCRDVersions(t, cp.Client); len(got) > 0 {
		t.Fatalf("installed without the right to: %v", got)
	}
	e.Stop()

	e, cl = engageWith(t, kubeconfig("none", none.Name), testRouteKinds, Settings{GatewayAPI: true})
	caps = cl.Capabilities()
	if a := caps.GatewayAPI; a.Reason != v1alpha1.ReasonGatewayAPIForbidden || a.Served || caps.CRDs {
		t.Fatalf("without CRD rights: availability %+v, Shardgate's CRDs %v", a, caps.CRDs)
	}
	if got := gatewayCRDVersions(t, cp.Client); len(got) > 0 {
		t.Fatalf("installed without the right to: %v", got)
	}
	e.Stop()

	_, cl = engageWith(t, kubeconfig("shipped", roles[0].Name), testRouteKinds, Settings{GatewayAPI: true})
	if a := cl.Capabilities().GatewayAPI; a.Reason != v1alpha1.ReasonGatewayAPIInstalled {
		t.Fatalf("with config/user-cluster/rbac.yaml: %+v", a)
	}
}

// TestUnservedRouteKindIsNotCached: a route kind whose API the cluster does not serve is left out
// of its cache and its route kinds (before, its failing list left the whole cluster unreachable);
// once the API is served, a new engagement caches it.
func TestUnservedRouteKindIsNotCached(t *testing.T) {
	cp := userAPIServer(t)
	kc, err := framework.KubeconfigFromConfig(cp.Config, "user")
	if err != nil {
		t.Fatal(err)
	}
	routes := routekinds.Registry{routekinds.Ingress{}, routekindstest.Tunnels{}}
	e, cl := engageWith(t, kc, routes, Settings{})
	tunnel := routekindstest.Tunnels{}.GroupVersionKind()
	if !cl.Capabilities().Unserved[tunnel] || cl.RouteKinds().For("Tunnel") != nil || cl.RouteKinds().For("Ingress") == nil {
		t.Fatalf("unserved %v, route kinds %v", cl.Capabilities().Unserved, cachedKinds(cl))
	}
	if err := cl.Reader().List(context.Background(), &routekindstest.TunnelList{}); !errors.Is(err, watchcache.ErrNotHeld) {
		t.Fatalf("listing Tunnels: %v, want ErrNotHeld", err)
	}
	e.Stop()

	if err := cp.InstallCRDs(filepath.Join("testdata", "tunnels")); err != nil {
		t.Fatal(err)
	}
	_, cl = engageWith(t, kc, routes, Settings{})
	if cl.Capabilities().Unserved[tunnel] || cl.RouteKinds().For("Tunnel") == nil {
		t.Fatalf("served: unserved %v, route kinds %v", cl.Capabilities().Unserved, cachedKinds(cl))
	}
	if err := cl.Reader().List(context.Background(), &routekindstest.TunnelList{}); err != nil {
		t.Fatalf("listing Tunnels once served: %v", err)
	}
}

// TestSettingsChangeReEngages: the same kubeconfig with the same settings keeps the engagement,
// with other settings replaces it (the cluster is found out and cached anew).
func TestSettingsChangeReEngages(t *testing.T) {
	e, err := NewEngager(Options{RouteKinds: testRouteKinds, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	kc, err := framework.KubeconfigFor("https://127.0.0.1:1", nil, "token")
	if err != nil {
		t.Fatal(err)
	}
	current := func() *engaged {
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.clusters[gatewayKey]
	}
	if err := e.Engage(gatewayKey, kc, Settings{GatewayAPI: true}); err != nil {
		t.Fatal(err)
	}
	first := current()
	if err := e.Engage(gatewayKey, kc, Settings{GatewayAPI: true}); err != nil || current() != first {
		t.Fatalf("the same settings again replaced the engagement (%v)", err)
	}
	if err := e.Engage(gatewayKey, kc, Settings{}); err != nil || current() == first || current().settings.GatewayAPI {
		t.Fatalf("other settings kept the engagement (%v)", err)
	}
}

// TestUserClusterRoleMayWriteExactlyItsCRDs: config/user-cluster/rbac.yaml lets Shardgate read and
// update, by name, exactly the CRDs it installs: its own and Gateway API's set.
func TestUserClusterRoleMayWriteExactlyItsCRDs(t *testing.T) {
	roles, err := framework.ReadClusterRoles("config/user-cluster/rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	own, err := embeddedCRDs()
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(gatewayapi.CRDNames())
	for _, u := range own {
		want = append(want, u.GetName())
	}
	var named []string
	for _, r := range roles[0].Rules {
		if slices.Contains(r.Resources, "customresourcedefinitions") && len(r.ResourceNames) > 0 {
			if !slices.Equal(r.Verbs, []string{"get", "patch", "update"}) {
				t.Errorf("CRD rule verbs %v", r.Verbs)
			}
			named = append(named, r.ResourceNames...)
		}
	}
	if !slices.Equal(slices.Sorted(slices.Values(named)), slices.Sorted(slices.Values(want))) {
		t.Fatalf("the role names CRDs %v, want %v", named, want)
	}
}

// TestGatewayAPIInstallRefusedByAPolicy: a cluster owner's admission policy that refuses every
// write of Gateway API's CRDs makes the install InstallFailed, and the cluster engages without it
// (Gateway API is optional; an owner's policy must not make the cluster unreachable).
func TestGatewayAPIInstallRefusedByAPolicy(t *testing.T) {
	cp := userAPIServer(t)
	ctx := context.Background()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "no-gateway-api"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{"apiextensions.k8s.io"}, APIVersions: []string{"v1"},
						Resources: []string{"customresourcedefinitions"}}}}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "object.spec.group != '" + gatewayapi.Group + "'"}}}}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "no-gateway-api"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}
	for _, o := range []client.Object{policy, binding} {
		if err := cp.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	// The policy takes effect once the API server has loaded it: a dry-run create says when.
	crds, err := gatewayapi.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	probe := crds["gatewayclasses."+gatewayapi.Group]
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		err := cp.Client.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the policy never refused a dry-run create: %v", err)
		}
	}
	kc, err := framework.KubeconfigFromConfig(cp.Config, "user")
	if err != nil {
		t.Fatal(err)
	}
	_, cl := engageWith(t, kc, withGatewayRoutes, Settings{GatewayAPI: true})
	a := cl.Capabilities().GatewayAPI
	if a.Served || (a.Reason != v1alpha1.ReasonGatewayAPIInstallFailed && a.Reason != v1alpha1.ReasonGatewayAPIForbidden) {
		t.Fatalf("availability %+v", a)
	}
	t.Logf("refused by the policy: %s: %s", a.Reason, a.Message)
	if got := cachedKinds(cl); len(got["HTTPRoute"]) > 0 {
		t.Fatalf("cached although refused: %v", got)
	}
}

// TestListenerSetsNeedTheirRights: a cluster registered with a role of the release before
// ListenerSets were served (no listenersets, no referencegrants) stays observable after the
// upgrade, with HTTPRoutes cached and ListenerSets not (a cache that may not list a kind never
// syncs, which made the whole cluster unreachable), told ListenerSetUnavailable with the step; the
// shipped role serves them.
func TestListenerSetsNeedTheirRights(t *testing.T) {
	cp := userAPIServer(t)
	ctx := context.Background()
	roles, err := framework.ReadClusterRoles("config/user-cluster/rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	older := roles[0].DeepCopy()
	older.Name = "shardgate-user-cluster-before-listenersets"
	older.Rules = slices.DeleteFunc(older.Rules, func(r rbacv1.PolicyRule) bool {
		return slices.ContainsFunc(r.Resources, func(res string) bool {
			return strings.HasPrefix(res, "listenersets") || res == "referencegrants"
		})
	})
	for _, role := range []*rbacv1.ClusterRole{roles[0], older} {
		if err := cp.Client.Create(ctx, role); err != nil {
			t.Fatal(err)
		}
	}
	kubeconfig := func(user, role string) []byte { return boundKubeconfig(t, cp, user, role) }
	routes := routekinds.Registry{routekinds.Ingress{}, routekinds.HTTPRoute{}}
	e, cl := engageWith(t, kubeconfig("older", older.Name), routes, Settings{GatewayAPI: true})
	a := cl.Capabilities().GatewayAPI
	if !a.RoutersServe() || a.ListenerSet || a.Reason != v1alpha1.ReasonListenerSetUnavailable ||
		!strings.Contains(a.Message, "rbac.yaml") {
		t.Fatalf("with the older role: %+v", a)
	}
	if err := cl.Reader().List(ctx, &gatewayv1.HTTPRouteList{}); err != nil {
		t.Fatalf("HTTPRoutes: %v", err)
	}
	if err := cl.Reader().List(ctx, &gatewayv1.ListenerSetList{}); !errors.Is(err, watchcache.ErrNotHeld) {
		t.Fatalf("ListenerSets cached without the right to list them: %v", err)
	}
	if slices.ContainsFunc(ManagedKinds(cl.Capabilities()), func(o client.Object) bool {
		_, grant := o.(*gatewayv1beta1.ReferenceGrant)
		return grant
	}) {
		t.Fatal("ReferenceGrants are among the cached kinds without the right to list them")
	}
	e.Stop()

	_, cl = engageWith(t, kubeconfig("shipped", roles[0].Name), routes, Settings{GatewayAPI: true})
	if a := cl.Capabilities().GatewayAPI; !a.ListenerSet {
		t.Fatalf("with config/user-cluster/rbac.yaml: %+v", a)
	}
	if err := cl.Reader().List(ctx, &gatewayv1.ListenerSetList{}); err != nil {
		t.Fatalf("ListenerSets with the shipped role: %v", err)
	}
}
