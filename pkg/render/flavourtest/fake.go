// Package flavourtest is a second router flavour for tests, registered only by them: it shows that
// the shards, allocation, canary and VIP code work with a flavour they were not written for. Its
// routers are told everything by flags, serve no Gateway API, read the cluster's key pair through
// the API instead of a mounted file, and answer their own canary with a body of their own.
package flavourtest

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/render"
)

// Name is the fake flavour's. The CRDs' enum does not allow it: the tests that use it run on a
// fake seed client or render directly.
const Name v1alpha1.Flavour = "fake"

// The fake flavour's class, its controller, its default image and its role.
const (
	Class      = "shardgate-fake"
	Controller = "test.shardgate.io/fake-router"
	Image      = "example.test/fake-router:1"
	Role       = "shardgate-router-fake"
	// TLSConfigName is its cluster-wide TLS setting (the redirect), beside the shared key pair.
	TLSConfigName = "shardgate-fake-tls"
)

// Its ports: none of Traefik's, so a test that finds one knows which flavour rendered it.
const (
	HTTP, HTTPS, Admin int32 = 8081, 8444, 9901
)

// Fake is the flavour.
type Fake struct{}

// Use registers Fake for the rest of the test.
func Use(t testing.TB) {
	t.Helper()
	t.Cleanup(render.Register(Fake{}))
}

// Name implements render.Flavour.
func (Fake) Name() v1alpha1.Flavour { return Name }

// ShardFilter implements render.Flavour: a label selector, like Traefik's.
func (Fake) ShardFilter() render.ShardFilter { return render.FilterByLabel }

// TenantGuards implements render.Flavour: none.
func (Fake) TenantGuards() render.TenantGuards { return render.TenantGuards{} }

// IngressClass implements render.Flavour.
func (Fake) IngressClass() render.IngressClass {
	return render.IngressClass{Name: Class, Controller: Controller}
}

// GatewayClassController implements render.Flavour: it serves no Gateway API.
func (Fake) GatewayClassController() string { return "" }

// DefaultImage implements render.Flavour.
func (Fake) DefaultImage() string { return Image }

// Ports implements render.Flavour.
func (Fake) Ports() render.Ports { return render.Ports{HTTP: HTTP, HTTPS: HTTPS, Admin: Admin} }

// Health implements render.Flavour.
func (Fake) Health() render.HTTPGet { return render.HTTPGet{Path: "/livez", Port: Admin} }

// Readiness implements render.Flavour.
func (Fake) Readiness() render.HTTPGet { return render.HTTPGet{Path: "/readyz", Port: Admin} }

// Canary implements render.Flavour.
func (Fake) Canary() render.Canary {
	return render.Canary{Path: "/canary", Port: Admin, Body: "fake-ok"}
}

// LoadMetrics implements render.Flavour: none (the shard's load is unknown).
func (Fake) LoadMetrics() render.LoadMetrics { return render.LoadMetrics{} }

// GatewayClusterRole implements render.Flavour: its routers serve no Gateway.
func (Fake) GatewayClusterRole() *rbacv1.ClusterRole { return nil }

// ClusterRole implements render.Flavour: it reads the key pair and its settings through the API.
func (Fake) ClusterRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: Role}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses/status"}, Verbs: []string{"update"}},
		{APIGroups: []string{""}, Resources: []string{"secrets", "services", "configmaps"},
			Verbs: []string{"get", "list", "watch"}},
	}}
}

// Router implements render.Flavour.
func (f Fake) Router(in render.RouterInput) render.Router {
	args := []string{"--class=" + Class, "--selector=" + in.RouteSelector, "--publish-hostname=" + in.Domain,
		fmt.Sprintf("--http=:%d", in.HTTP), fmt.Sprintf("--https=:%d", in.HTTPS), fmt.Sprintf("--admin=:%d", Admin)}
	if in.TLS != nil {
		args = append(args, "--default-certificate="+names.Namespace+"/"+names.TLSSecretName, "--settings="+TLSConfigName)
	}
	return render.Router{Container: corev1.Container{Name: "fake-router", Args: args}}
}

// TLSObjects implements render.Flavour: a ConfigMap the router reads through the API.
func (Fake) TLSObjects(in *render.TLSInput) []render.Object {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: names.Namespace, Name: TLSConfigName},
		Data: map[string]string{"redirect-to-https": fmt.Sprint(in.RedirectHTTP)}}
	return []render.Object{{GVK: corev1.SchemeGroupVersion.WithKind("ConfigMap"), Obj: cm}}
}
