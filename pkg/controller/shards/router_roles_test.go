package shards

import (
	"context"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/test/framework"
)

const userClusterRBAC = "config/user-cluster/rbac.yaml"

func TestCompareRouterRole(t *testing.T) {
	want := &rbacv1.ClusterRole{Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"services", "secrets"}, Verbs: []string{"get", "list"}},
	}}
	rules := func(r ...rbacv1.PolicyRule) *rbacv1.ClusterRole { return &rbacv1.ClusterRole{Rules: r} }
	tests := []struct {
		name string
		live *rbacv1.ClusterRole
		want roleState
	}{
		{"absent", nil, roleMissing},
		{"same rules", rules(want.Rules...), roleAsRendered},
		{"split and reordered", rules(
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"list", "get"}},
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"get", "list", "get"}},
		), roleAsRendered},
		{"a verb more", rules(rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"services", "secrets"}, Verbs: []string{"get", "list", "update"}}), roleDiffers},
		{"a verb less", rules(rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"services", "secrets"}, Verbs: []string{"get"}}), roleDiffers},
		{"wildcard", rules(rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}), roleDiffers},
		{"limited to a name", rules(rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"services", "secrets"}, ResourceNames: []string{"x"}, Verbs: []string{"get", "list"}}), roleDiffers},
		{"aggregated", &rbacv1.ClusterRole{Rules: want.Rules, AggregationRule: &rbacv1.AggregationRule{}}, roleDiffers},
		{"being deleted", &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &metav1.Time{}}, Rules: want.Rules}, roleMissing},
	}
	for _, tt := range tests {
		if got := compareRouterRole(tt.live, want); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestUserClusterRoleShipsTheRouterRoles: config/user-cluster/rbac.yaml ships the routers'
// ClusterRoles exactly as Shardgate renders them (labelled so Shardgate's cache sees them).
func TestUserClusterRoleShipsTheRouterRoles(t *testing.T) {
	roles, err := framework.ReadClusterRoles(userClusterRBAC)
	if err != nil {
		t.Fatal(err)
	}
	shipped := map[string]*rbacv1.ClusterRole{}
	for _, r := range roles {
		shipped[r.Name] = r
	}
	for _, want := range render.RouterClusterRoles() {
		got, ok := shipped[want.Name]
		if !ok {
			t.Fatalf("%s does not ship ClusterRole %s", userClusterRBAC, want.Name)
		}
		if !equality.Semantic.DeepEqual(got.Rules, want.Rules) || compareRouterRole(got, want) != roleAsRendered {
			t.Errorf("%s: shipped rules %+v, rendered %+v", want.Name, got.Rules, want.Rules)
		}
		if got.Labels[v1alpha1.ManagedByLabel] != v1alpha1.ManagedByValue {
			t.Errorf("%s: labels %v", want.Name, got.Labels)
		}
	}
}

// TestUserClusterRoleMayBindEveryRouterRole: the least-privilege role lets Shardgate bind exactly
// the router roles it renders, every flavour's among them: a flavour whose role it may not bind
// would have its shards refused in every cluster set up with the file.
func TestUserClusterRoleMayBindEveryRouterRole(t *testing.T) {
	roles, err := framework.ReadClusterRoles(userClusterRBAC)
	if err != nil {
		t.Fatal(err)
	}
	var bindable []string
	for _, r := range roles {
		for _, rule := range r.Rules {
			if r.Name == "shardgate-user-cluster" && slices.Contains(rule.Verbs, "bind") {
				bindable = append(bindable, rule.ResourceNames...)
			}
		}
	}
	var want []string
	for _, r := range render.RouterClusterRoles() {
		want = append(want, r.Name)
	}
	slices.Sort(bindable)
	slices.Sort(want)
	if !slices.Equal(bindable, want) {
		t.Errorf("%s lets Shardgate bind %v, want the router roles %v", userClusterRBAC, bindable, want)
	}
}

// TestLeastPrivilegeRoleBindsRouterRolesOnly: the identity bound to config/user-cluster/rbac.yaml
// may bind the router ClusterRoles and neither create, update, patch, escalate nor delete them
// (nor any other ClusterRole), and Shardgate deploys a shard with it without writing them; a
// router role the admin removed is reported (RouterRoleMissing), not created.
func TestLeastPrivilegeRoleBindsRouterRolesOnly(t *testing.T) {
	ctx := context.Background()
	seed := controllertest.Seed(t)
	userCP := framework.StartControlPlane(t, "user", framework.ControlPlaneOptions{})
	kc, err := userCP.RestrictedKubeconfig(ctx, "shardgate", userClusterRBAC)
	if err != nil {
		t.Fatal(err)
	}
	restricted, err := framework.ClientFromKubeconfig(kc, clusteraccess.UserClusterScheme())
	if err != nil {
		t.Fatal(err)
	}
	allowed := func(verb, name string) bool {
		t.Helper()
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "shardgate",
			Groups: []string{"system:authenticated"}, ResourceAttributes: &authorizationv1.ResourceAttributes{
				Group: rbacv1.GroupName, Resource: "clusterroles", Verb: verb, Name: name}}}
		if err := userCP.Client.Create(ctx, sar); err != nil {
			t.Fatal(err)
		}
		return sar.Status.Allowed
	}
	for _, name := range []string{"shardgate-router-traefik", "shardgate-router-vip", "cluster-admin", ""} {
		for _, verb := range []string{"create", "update", "patch", "escalate", "delete", "deletecollection"} {
			if allowed(verb, name) {
				t.Errorf("the user-cluster role may %s ClusterRole %q", verb, name)
			}
		}
		if bind := allowed("bind", name); bind != (name == "shardgate-router-traefik" || name == "shardgate-router-vip") {
			t.Errorf("bind ClusterRole %q: %v", name, bind)
		}
	}

	ns := controllertest.Namespace(t, seed.Client)
	access := clusteraccess.NewFake()
	r := &Reconciler{Client: seed.Client, Access: access, Board: cistatus.NewBoard(seed.Client)}
	key := newCI(t, seed.Client, ns, v1alpha1.ShardSpec{Name: "default", Publishing: v1alpha1.PublishNodePort})
	access.Add(key, &clusteraccess.FakeCluster{Client: tlsSecretOnly{restricted}, Caps: clusteraccess.Capabilities{AdmissionPolicy: true, Version: "v1.37"}})
	controllertest.Reconcile(t, r, key, 2)
	if c := posted(t, r, key, v1alpha1.ConditionShardsAvailable); c.Reason != v1alpha1.ReasonNoRouterReady {
		t.Fatalf("ShardsAvailable: %+v", c)
	}
	if !exists(t, userCP.Client, &appsv1.Deployment{}, client.ObjectKey{Namespace: names.Namespace, Name: names.RouterName("default")}) {
		t.Fatal("the router was not deployed")
	}
	if !exists(t, userCP.Client, &rbacv1.ClusterRoleBinding{}, client.ObjectKey{Name: "shardgate-" + names.RouterName("default")}) {
		t.Fatal("the router's ClusterRoleBinding was not created")
	}
	role := &rbacv1.ClusterRole{}
	if err := userCP.Client.Get(ctx, client.ObjectKey{Name: "shardgate-router-traefik"}, role); err != nil {
		t.Fatal(err)
	}
	for _, m := range role.ManagedFields {
		if m.Manager == v1alpha1.FieldOwner {
			t.Fatalf("Shardgate wrote the admin's router role: %+v", role.ManagedFields)
		}
	}

	// The admin removes the role: reported, not recreated, and nothing else stops.
	if err := userCP.Client.Delete(ctx, role); err != nil {
		t.Fatal(err)
	}
	controllertest.Reconcile(t, r, key, 1)
	if c := posted(t, r, key, v1alpha1.ConditionShardsAvailable); c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonRouterRoleMissing {
		t.Fatalf("ShardsAvailable without the router role: %+v", c)
	}
	// The admin widens it: reported as differing, and left as the admin made it.
	role = &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "shardgate-router-traefik",
		Labels: map[string]string{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue}},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}}
	if err := userCP.Client.Create(ctx, role); err != nil {
		t.Fatal(err)
	}
	controllertest.Reconcile(t, r, key, 1)
	if c := posted(t, r, key, v1alpha1.ConditionShardsAvailable); c.Reason != v1alpha1.ReasonRouterRoleDiffers {
		t.Fatalf("ShardsAvailable with a widened router role: %+v", c)
	}
}

// tlsSecretOnly lists Secrets as the engagement's cache serves them: only the routers' TLS Secret,
// by name (which the role may read and this test does not render); the role may list no others.
type tlsSecretOnly struct{ client.Client }

func (c tlsSecretOnly) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*corev1.SecretList); ok {
		return nil
	}
	return c.Client.List(ctx, list, opts...)
}
