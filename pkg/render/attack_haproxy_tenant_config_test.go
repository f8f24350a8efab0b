package render_test

import (
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// Attack review of the HAProxy flavour (#31). haproxytech/kubernetes-ingress v1.11.12 reads many
// annotations from the tenant's own Ingresses AND Services (pkg/service/service.go: s.annotations
// is [Service, Ingress, ConfigMap]), under any prefix (pkg/store/convert.go CopyAnnotations), and
// the shard's routers are shared by every tenant of the cluster. T (namespace edit) writes both.

func haproxyArgs(t *testing.T) []string {
	t.Helper()
	objs := twoFlavours(t, v1alpha1.ShardSpec{Name: "default"}, v1alpha1.ShardSpec{Name: "heavy", Flavour: v1alpha1.FlavourHAProxy})
	return as[appsv1.Deployment](t, objs, "Deployment", "router-heavy").Spec.Template.Spec.Containers[0].Args
}

// TestAttackHAProxyTenantConfigSnippets: `backend-config-snippet` on T's Ingress or Service is
// pasted verbatim into the backend section of the shard's shared haproxy.cfg
// (service.HandleBackend -> annotations.NewCfgSnippet, enabled unless --disable-config-snippets).
// A snippet such as
//
//	http-request return status 200 content-type text/plain file /etc/haproxy/certs/frontend/shardgate-system_shardgate-tls.pem
//	http-request return status 200 file /var/run/secrets/kubernetes.io/serviceaccount/token
//
// is loaded by HAProxy at (re)load and served to T: the cluster's TLS private key (written in
// clear to the router's emptyDir, since --default-ssl-certificate reads it through the API) and the
// router's token, whose ClusterRole reads every Secret of the cluster. The routers must run with
// --disable-config-snippets (all: backend, frontend and global).
func TestAttackHAProxyTenantConfigSnippets(t *testing.T) {
	args := haproxyArgs(t)
	if !slices.ContainsFunc(args, func(a string) bool {
		v, ok := strings.CutPrefix(a, "--disable-config-snippets=")
		return ok && (v == "all" || strings.Contains(v, "backend") && strings.Contains(v, "frontend") && strings.Contains(v, "global"))
	}) {
		t.Errorf("HAProxy routers honour tenants' backend-config-snippet (arbitrary haproxy.cfg in a shared router; "+
			"reads the cluster key and the router token): args %v lack --disable-config-snippets=all", args)
	}
}

// TestAttackHAProxyExternalNameServices: an Ingress backend that is T's Service of type
// ExternalName (externalName: localhost, kubernetes.default.svc, 169.254.169.254, another
// namespace's service) is proxied to by the routers (CVE-2021-25740): SSRF from shardgate-system,
// on the host network for HostNetwork/VIP shards (node-local ports). Traefik's routers refuse
// ExternalName Services by default (allowExternalNameServices=false). HAProxy's
// --disable-service-external-name would, but it then ignores the ExternalName Service it publishes
// Ingress status from too (found on real pods), so the admission policy refuses tenants'
// ExternalName Services in a cluster with an HAProxy shard instead.
func TestAttackHAProxyExternalNameServices(t *testing.T) {
	objs := twoFlavours(t, v1alpha1.ShardSpec{Name: "default"}, v1alpha1.ShardSpec{Name: "heavy", Flavour: v1alpha1.FlavourHAProxy})
	vap := as[admissionregistrationv1.ValidatingAdmissionPolicy](t, objs, "ValidatingAdmissionPolicy", "shardgate-allocation")
	if args := haproxyArgs(t); !slices.Contains(args, "--disable-service-external-name") &&
		!slices.ContainsFunc(vap.Spec.Validations, func(v admissionregistrationv1.Validation) bool {
			return strings.Contains(v.Expression, "object.spec.?type.orValue('') != 'ExternalName'")
		}) {
		t.Errorf("HAProxy routers forward to tenants' ExternalName Services: args %v lack --disable-service-external-name "+
			"and no admission validation refuses them", args)
	}
}

// TestAttackHAProxyRouteACLHijacksEveryHost: `route-acl` on T's Service (read from the Service's
// annotations, pkg/ingress/ingress.go handlePath) is inserted unescaped into a use_backend rule at
// index 0 of the http and https frontends (pkg/route/route.go AddCustomRoute):
//
//	use_backend <T's backend> if { var(txn.host) -m str t.c1.z } { path -m beg / } { <route-acl> }
//
// With route-acl `always_true } || { always_true` the condition is true for every request: T's
// backend takes every host of every tenant on the shard, TLS-terminated with the cluster's
// certificate, before the host map is consulted. No flag of v1.11.12 turns route-acl off, so only
// the admission policy can refuse it: on Services (and Ingresses), under any prefix.
func TestAttackHAProxyRouteACLHijacksEveryHost(t *testing.T) {
	objs := twoFlavours(t, v1alpha1.ShardSpec{Name: "default"}, v1alpha1.ShardSpec{Name: "heavy", Flavour: v1alpha1.FlavourHAProxy})
	matchesServices, guardsRouteACL := false, false
	for _, o := range objs {
		if o.GetKind() != "ValidatingAdmissionPolicy" {
			continue
		}
		vap := as[admissionregistrationv1.ValidatingAdmissionPolicy](t, objs, o.GetKind(), o.GetName())
		for _, r := range vap.Spec.MatchConstraints.ResourceRules {
			if slices.Contains(r.APIGroups, "") && slices.Contains(r.Resources, "services") {
				matchesServices = true
			}
		}
		for _, v := range vap.Spec.Validations {
			if strings.Contains(v.Expression, "route-acl") {
				guardsRouteACL = true
			}
		}
	}
	if !matchesServices || !guardsRouteACL {
		t.Errorf("an HAProxy shard is rendered, yet no admission policy refuses a tenant's route-acl annotation on Services "+
			"(matches services: %v, a validation naming route-acl: %v): one Service annotation takes every host of the shard",
			matchesServices, guardsRouteACL)
	}
}

// TestAttackHAProxyCrossNamespaceSecrets: the controller resolves `server-crt`, `server-ca`
// (Service/Ingress annotations, pkg/annotations/service/crt.go, ca.go) and `auth-secret`
// (basicAuth.go) as "<namespace>/<name>" in ANY namespace, with its ClusterRole that reads every
// Secret. T names shardgate-system/shardgate-tls or another tenant's key pair as the client
// certificate the router presents to an upstream T picks (an ExternalName Service): the router
// authenticates as the cluster or as the other tenant (confused deputy); auth-secret turns the
// router into an oracle for another namespace's htpasswd. Refuse a "/" in those annotations'
// values (any prefix) in the policy, or a cluster without them.
func TestAttackHAProxyCrossNamespaceSecrets(t *testing.T) {
	objs := twoFlavours(t, v1alpha1.ShardSpec{Name: "default"}, v1alpha1.ShardSpec{Name: "heavy", Flavour: v1alpha1.FlavourHAProxy})
	var exprs []string
	for _, o := range objs {
		if o.GetKind() == "ValidatingAdmissionPolicy" {
			for _, v := range as[admissionregistrationv1.ValidatingAdmissionPolicy](t, objs, o.GetKind(), o.GetName()).Spec.Validations {
				exprs = append(exprs, v.Expression)
			}
		}
	}
	all := strings.Join(exprs, "\n")
	for _, ann := range []string{"server-crt", "server-ca", "auth-secret"} {
		if !strings.Contains(all, ann) {
			t.Errorf("nothing refuses a tenant's %s annotation naming another namespace's Secret (e.g. shardgate-system/shardgate-tls)", ann)
		}
	}
}
