package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/test/framework"
)

// RoutesTrustSpecInput is what RoutesTrustSpec runs on: a seed and one user cluster with
// simulated nodes, registered with Shardgate's documented user-cluster role (not cluster-admin).
type RoutesTrustSpecInput struct {
	Seed *framework.ControlPlane
	User *framework.ControlPlane
}

// RoutesTrustSpec proves what a user-cluster owner relies on: other ingress controllers keep
// their Ingresses and their default class, tenants with the built-in edit role cannot set
// allocation fields or the managed-by label (not even through the status subresource), what Shardgate stops rendering is
// removed, and a cluster that is no longer selected is left as if Shardgate had never been there.
// All of it runs with config/user-cluster/rbac.yaml, the ClusterRole operators bind instead of
// cluster-admin.
func RoutesTrustSpec(ctx context.Context, t *testing.T, inputGetter func() RoutesTrustSpecInput) {
	in := inputGetter()
	seed, u := in.Seed, in.User
	const roleFile = "config/user-cluster/rbac.yaml"
	// Another ingress controller was here first and is the cluster's default.
	must(t, u.Client.Create(ctx, &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "nginx",
		Annotations: map[string]string{"ingressclass.kubernetes.io/is-default-class": "true"}},
		Spec: networkingv1.IngressClassSpec{Controller: "k8s.io/ingress-nginx"}}))
	for _, ns := range []string{"team", "other"} {
		must(t, u.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	addNodes(ctx, t, u, framework.NodeSpec{Name: "n1", InternalIP: "127.0.70.1", Labels: map[string]string{"role": "r", "zone": "a"}})
	sel := map[string]string{"ingress": "routes"}
	createProfile(ctx, t, seed, "routes", sel, v1alpha1.DNSSettings{},
		v1alpha1.ShardSpec{Name: v1alpha1.DefaultShardName, Publishing: v1alpha1.PublishNodePort, NodeSelector: map[string]string{"role": "r", "zone": "a"}})
	kc, err := u.RestrictedKubeconfig(ctx, "shardgate-restricted", roleFile)
	must(t, err)
	putKubeconfigSecret(ctx, t, seed, "default", "routes", "routes", kc, sel)
	waitCondition(ctx, t, seed, key("routes"), v1alpha1.ConditionShardsAvailable, metav1.ConditionTrue, v1alpha1.ReasonShardsAvailable)
	waitCondition(ctx, t, seed, key("routes"), v1alpha1.ConditionRoutesProtected, metav1.ConditionTrue, v1alpha1.ReasonPolicyInstalled)

	mine := routeIngress("team", "mine", "")
	must(t, u.Client.Create(ctx, mine))
	allocatedIn(ctx, t, u, "team", "mine")

	t.Run("another controller keeps its Ingresses and its default class", func(t *testing.T) {
		legacy := routeIngress("other", "legacy", "legacy.example.org")
		legacy.Spec.IngressClassName = nil
		legacy.Annotations = map[string]string{"kubernetes.io/ingress.class": "nginx"}
		must(t, u.Client.Create(ctx, legacy))
		must(t, u.Client.Create(ctx, routeIngress("team", "after", "")))
		allocatedIn(ctx, t, u, "team", "after") // a pass has run since legacy was created
		got := &networkingv1.Ingress{}
		must(t, u.Client.Get(ctx, client.ObjectKeyFromObject(legacy), got))
		if _, ok := got.Annotations[v1alpha1.AllocationAnnotation]; ok || got.Labels[v1alpha1.ShardLabel] != "" {
			t.Fatalf("an Ingress of class nginx (legacy annotation) was allocated: %v %v", got.Labels, got.Annotations)
		}
		class := &networkingv1.IngressClass{}
		must(t, u.Client.Get(ctx, client.ObjectKey{Name: names.IngressClassName}, class))
		if v, ok := class.Annotations["ingressclass.kubernetes.io/is-default-class"]; ok {
			t.Fatalf("Shardgate took the default class from nginx: %q", v)
		}
		// The administrator retires nginx as the default: Shardgate's class becomes it, once.
		setClassDefault(ctx, t, u, "nginx", "false")
		eventually(ctx, t, 30*time.Second, func() (bool, string) {
			must(t, u.Client.Get(ctx, client.ObjectKey{Name: names.IngressClassName}, class))
			return class.Annotations["ingressclass.kubernetes.io/is-default-class"] == "true", fmt.Sprintf("annotations %v", class.Annotations)
		})
		// ... and an administrator who changes it is never overruled.
		setClassDefault(ctx, t, u, names.IngressClassName, "false")
		time.Sleep(5 * time.Second)
		must(t, u.Client.Get(ctx, client.ObjectKey{Name: names.IngressClassName}, class))
		if v := class.Annotations["ingressclass.kubernetes.io/is-default-class"]; v != "false" {
			t.Fatalf("Shardgate overruled the administrator: is-default-class=%q", v)
		}
	})

	t.Run("tenants with the edit role cannot set allocation fields, not even through status", func(t *testing.T) {
		alice := tenantClient(ctx, t, u, "alice", "team", "edit")
		byHand := routeIngress("team", "byhand", "")
		byHand.Labels = map[string]string{v1alpha1.ShardLabel: v1alpha1.DefaultShardName}
		if err := alice.Create(ctx, byHand); !apierrors.IsForbidden(err) {
			t.Fatalf("edit user set the shard label on create: %v", err)
		}
		// The managed-by label would make her Ingress pass for Shardgate's own canary.
		managed := routeIngress("team", "managed", "")
		managed.Labels = map[string]string{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue}
		if err := alice.Create(ctx, managed); !apierrors.IsForbidden(err) {
			t.Fatalf("edit user set the managed-by label on create: %v", err)
		}
		got := &networkingv1.Ingress{}
		must(t, alice.Get(ctx, client.ObjectKey{Namespace: "team", Name: "mine"}, got))
		got.Annotations[v1alpha1.CNAMETargetAnnotation] = "victim.example.org"
		if err := alice.Update(ctx, got); !apierrors.IsForbidden(err) {
			t.Fatalf("edit user changed an allocation annotation: %v", err)
		}
		must(t, alice.Get(ctx, client.ObjectKey{Namespace: "team", Name: "mine"}, got))
		got.Annotations["team.example/owner"] = "alice" // her own annotations stay hers
		must(t, alice.Update(ctx, got))
		// Whoever may write Ingress status (a router, another controller) cannot relabel through
		// it: the API server keeps label changes sent to the status subresource.
		writer := tenantClient(ctx, t, u, "status-writer", "team", "")
		must(t, writer.Get(ctx, client.ObjectKey{Namespace: "team", Name: "mine"}, got))
		got.Labels[v1alpha1.ShardLabel] = "stolen"
		got.Annotations[v1alpha1.HostsAnnotation] = "stolen.example.org"
		if err := writer.Status().Update(ctx, got); !apierrors.IsForbidden(err) {
			t.Fatalf("status writer relabelled an Ingress through status: %v", err)
		}
	})

	t.Run("a field dropped from a shard's spec leaves the user cluster", func(t *testing.T) {
		updateProfile(ctx, t, seed, "routes", func(p *v1alpha1.IngressProfile) {
			p.Spec.Shards[0].NodeSelector = map[string]string{"role": "r"}
		})
		eventually(ctx, t, 30*time.Second, func() (bool, string) {
			d := &appsv1.Deployment{}
			must(t, u.Client.Get(ctx, client.ObjectKey{Namespace: names.Namespace, Name: names.RouterName(v1alpha1.DefaultShardName)}, d))
			ns := d.Spec.Template.Spec.NodeSelector
			return len(ns) == 1 && ns["role"] == "r", fmt.Sprintf("router nodeSelector %v", ns)
		})
	})

	t.Run("a cluster no longer selected is left as if Shardgate had never been there", func(t *testing.T) {
		s := &corev1.Secret{}
		must(t, seed.Client.Get(ctx, key("routes"), s))
		delete(s.Labels, "ingress")
		must(t, seed.Client.Update(ctx, s))
		eventually(ctx, t, 60*time.Second, func() (bool, string) {
			err := seed.Client.Get(ctx, key("routes"), &v1alpha1.ClusterIngress{})
			return apierrors.IsNotFound(err), fmt.Sprintf("ClusterIngress: %v", err)
		})
		gone := func(obj client.Object, k client.ObjectKey) (bool, string) {
			err := u.Client.Get(ctx, k, obj)
			if apierrors.IsNotFound(err) {
				return true, ""
			}
			return false, fmt.Sprintf("%T %s still there (%v)", obj, k, err)
		}
		eventually(ctx, t, 60*time.Second, func() (bool, string) {
			for _, o := range []struct {
				obj client.Object
				key client.ObjectKey
			}{
				{&networkingv1.IngressClass{}, client.ObjectKey{Name: names.IngressClassName}},
				{&corev1.ConfigMap{}, client.ObjectKey{Namespace: names.UserInfoNamespace, Name: names.UserInfoName}},
				{&appsv1.Deployment{}, client.ObjectKey{Namespace: names.Namespace, Name: names.RouterName(v1alpha1.DefaultShardName)}},
				// The binding was Shardgate's; the role is the cluster admin's (config/user-cluster/rbac.yaml).
				{&rbacv1.ClusterRoleBinding{}, client.ObjectKey{Name: "shardgate-" + names.RouterName(v1alpha1.DefaultShardName)}},
				{&corev1.Namespace{}, client.ObjectKey{Name: names.Namespace}},
			} {
				if ok, msg := gone(o.obj, o.key); !ok {
					return false, msg
				}
			}
			return true, ""
		})
		// Shardgate may only bind the router roles: the ones the admin created stay theirs.
		must(t, u.Client.Get(ctx, client.ObjectKey{Name: "shardgate-router-traefik"}, &rbacv1.ClusterRole{}))
		policies := &admissionregistrationv1.ValidatingAdmissionPolicyList{}
		must(t, u.Client.List(ctx, policies, client.MatchingLabels{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue}))
		if len(policies.Items) != 0 {
			t.Fatalf("admission policies left: %d", len(policies.Items))
		}
		for _, k := range []client.ObjectKey{{Namespace: "team", Name: "mine"}, {Namespace: "team", Name: "after"}} {
			got := &networkingv1.Ingress{}
			must(t, u.Client.Get(ctx, k, got))
			if _, ok := got.Labels[v1alpha1.ShardLabel]; ok {
				t.Errorf("%s keeps the shard label", k)
			}
			for a := range got.Annotations {
				if strings.HasPrefix(a, "shardgate.io/") {
					t.Errorf("%s keeps annotation %s", k, a)
				}
			}
			if got.Annotations["team.example/owner"] != "alice" && k.Name == "mine" {
				t.Errorf("%s lost its owner's own annotation", k)
			}
		}
	})
}

func TestRoutesTrust(t *testing.T) {
	t.Parallel() // see main_test.go
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	env := framework.StartEnvironment(t, framework.EnvironmentOptions{UserClusters: 1, SimulatedNodes: true})
	framework.StartController(t, env.Seed, "--dns-zone=routes.test")
	RoutesTrustSpec(ctx, t, func() RoutesTrustSpecInput { return RoutesTrustSpecInput{Seed: env.Seed, User: env.Users[0]} })
}

// allocatedIn waits for an Ingress to be Allocated.
func allocatedIn(ctx context.Context, t *testing.T, u *framework.ControlPlane, ns, name string) {
	t.Helper()
	eventually(ctx, t, 30*time.Second, func() (bool, string) {
		ing := &networkingv1.Ingress{}
		if err := u.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, ing); err != nil {
			return false, err.Error()
		}
		return ing.Annotations[v1alpha1.AllocationAnnotation] == v1alpha1.AllocationAllocated,
			fmt.Sprintf("%s/%s: allocation %q", ns, name, ing.Annotations[v1alpha1.AllocationAnnotation])
	})
}

func setClassDefault(ctx context.Context, t *testing.T, u *framework.ControlPlane, name, value string) {
	t.Helper()
	c := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
	update(ctx, t, u.Client, c, func(c *networkingv1.IngressClass) {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations["ingressclass.kubernetes.io/is-default-class"] = value
	})
}

// tenantClient returns a client for a new user of u bound in namespace ns to the built-in
// ClusterRole role; with role "", to a Role that may only read Ingresses and write their status.
func tenantClient(ctx context.Context, t *testing.T, u *framework.ControlPlane, user, ns, role string) client.Client {
	t.Helper()
	ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}
	if role == "" {
		r := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses/status"}, Verbs: []string{"get", "update", "patch"}},
		}}
		must(t, u.Client.Create(ctx, r))
		ref = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user}
	}
	must(t, u.Client.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user}, RoleRef: ref,
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}}}))
	// The binding, and for "edit" the aggregation of the Ingress rules into it (kube-controller-
	// manager's), take effect a moment later on a loaded machine: wait until the user may get
	// Ingresses, or a refusal below would be RBAC's, not the admission policy's.
	eventually(ctx, t, 30*time.Second, func() (bool, string) {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Group: "networking.k8s.io",
				Resource: "ingresses"}}}
		err := u.Client.Create(ctx, review)
		return err == nil && review.Status.Allowed, fmt.Sprintf("%s may not get Ingresses in %s yet: %v", user, ns, err)
	})
	kc, err := u.Kubeconfig(user)
	must(t, err)
	c, err := framework.ClientFromKubeconfig(kc, framework.Scheme())
	must(t, err)
	return c
}

// TestClusterWithoutAdmissionPolicyAPI: a user cluster that does not serve
// ValidatingAdmissionPolicy (Kubernetes before 1.30) is engaged without the policy and says so
// (before, the policy's informer never synced and the cluster was never engaged).
func TestClusterWithoutAdmissionPolicyAPI(t *testing.T) {
	t.Parallel() // see main_test.go
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dirs, err := framework.SeedCRDDirs()
	must(t, err)
	seed := framework.StartControlPlane(t, "seed", framework.ControlPlaneOptions{CRDDirs: dirs})
	old := framework.StartControlPlane(t, "old", framework.ControlPlaneOptions{APIServerFlags: map[string]string{
		"runtime-config":            "admissionregistration.k8s.io/v1/validatingadmissionpolicies=false,admissionregistration.k8s.io/v1/validatingadmissionpolicybindings=false",
		"disable-admission-plugins": "ValidatingAdmissionPolicy",
	}})
	framework.StartController(t, seed, "--dns-zone=old.test")
	createProfile(ctx, t, seed, "all", nil, v1alpha1.DNSSettings{},
		v1alpha1.ShardSpec{Name: v1alpha1.DefaultShardName, Publishing: v1alpha1.PublishNodePort})
	registerKubeconfigSecret(ctx, t, seed, "default", "old", "old", old, nil)
	waitCondition(ctx, t, seed, key("old"), v1alpha1.ConditionClusterReachable, metav1.ConditionTrue, v1alpha1.ReasonReachable)
	waitCondition(ctx, t, seed, key("old"), v1alpha1.ConditionRoutesProtected, metav1.ConditionFalse, v1alpha1.ReasonPolicyUnsupported)
	eventually(ctx, t, 30*time.Second, func() (bool, string) {
		d := &appsv1.Deployment{}
		err := old.Client.Get(ctx, client.ObjectKey{Namespace: names.Namespace, Name: names.RouterName(v1alpha1.DefaultShardName)}, d)
		return err == nil, fmt.Sprintf("router: %v", err)
	})
}
