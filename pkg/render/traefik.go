package render

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/routerload"
)

// Traefik renders Traefik v3 routers. Its class is "shardgate", the class every Shardgate cluster
// has had since the first release: users' Ingresses name it.
type Traefik struct{}

// TraefikImage is the default router image.
const TraefikImage = "docker.io/library/traefik:v3.7.12"

// traefikClusterRole is shared by every Traefik shard.
const traefikClusterRole = "shardgate-router-traefik"

// Traefik's ports behind a Service, and its admin entry point (ping, the API) on every router.
const (
	traefikHTTP, traefikHTTPS int32 = 8000, 8443
	traefikAdminPort          int32 = 9000
)

// Name implements Flavour.
func (Traefik) Name() v1alpha1.Flavour { return v1alpha1.FlavourTraefik }

// ShardFilter implements Flavour: Traefik's Ingress provider takes a label selector.
func (Traefik) ShardFilter() ShardFilter { return FilterByLabel }

// TenantGuards implements Flavour: none. Traefik reads its own annotation prefix only, what those
// annotations name (middlewares, TLS options) comes from providers Shardgate does not turn on, and
// it refuses ExternalName Services unless told otherwise.
func (Traefik) TenantGuards() TenantGuards { return TenantGuards{} }

// IngressClass implements Flavour. Traefik serves only classes whose controller is its own.
func (Traefik) IngressClass() IngressClass {
	return IngressClass{Name: names.IngressClassName, Controller: "traefik.io/ingress-controller"}
}

// GatewayClassController implements Flavour: Traefik's kubernetesgateway provider.
func (Traefik) GatewayClassController() string { return "traefik.io/gateway-controller" }

// DefaultImage implements Flavour.
func (Traefik) DefaultImage() string { return TraefikImage }

// Ports implements Flavour.
func (Traefik) Ports() Ports {
	return Ports{HTTP: traefikHTTP, HTTPS: traefikHTTPS, Admin: traefikAdminPort}
}

// Health implements Flavour: Traefik's ping on its admin entry point.
func (Traefik) Health() HTTPGet { return HTTPGet{Path: "/ping", Port: traefikAdminPort} }

// Readiness implements Flavour: the same ping, settled for five seconds. Traefik answers it once
// its internal provider's routes are loaded, which may be a second or two before its Kubernetes
// provider's (a CI run saw a router turn ready, enter DNS and answer a user's host 404 1.4 s
// later); the settle lets them load before DNS and a VIP send it requests.
func (Traefik) Readiness() HTTPGet {
	return HTTPGet{Path: "/ping", Port: traefikAdminPort, Settle: 5 * time.Second}
}

// Canary implements Flavour: the routers' own ping ("OK"), reached through the same entry point,
// host routing and Service endpoints as any user's route.
func (Traefik) Canary() Canary { return Canary{Path: "/ping", Port: traefikAdminPort, Body: "OK"} }

// LoadMetrics implements Flavour: Traefik's Prometheus metrics on its admin entry point, whose own
// requests (probes, scrapes) the reporter leaves out. The capacity is a conservative figure for
// one router on about a core (OpenShift publishes ~5k requests/s per vCPU for HAProxy).
func (Traefik) LoadMetrics() LoadMetrics {
	return LoadMetrics{Path: "/metrics", Port: traefikAdminPort, Format: routerload.FormatTraefik,
		AdminEntryPoint: "traefik", Capacity: 2000,
		Args: []string{"--metrics.prometheus=true", "--metrics.prometheus.entryPoint=traefik"}}
}

// ClusterRole implements Flavour.
func (Traefik) ClusterRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: objectMeta(traefikClusterRole, "", nil),
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"services", "secrets", "nodes"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses", "ingressclasses"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses/status"}, Verbs: []string{"update"}},
		},
	}
}

// traefikGatewayClusterRole is bound to a shard's routers where the cluster serves Gateway API.
const traefikGatewayClusterRole = "shardgate-router-traefik-gateway"

// GatewayClusterRole implements Flavour: what the Gateway provider watches and the status it
// writes; namespaces for the listeners' allowedRoutes, ConfigMaps for BackendTLSPolicies' CA
// certificates (it waits for every informer before it serves anything).
func (Traefik) GatewayClusterRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: objectMeta(traefikGatewayClusterRole, "", nil),
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{gatewayv1.GroupName}, Resources: traefikGatewayResources, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{gatewayv1.GroupName}, Resources: statusOf(traefikGatewayResources), Verbs: []string{"update"}},
		},
	}
}

// Router implements Flavour: Traefik's Kubernetes Ingress provider, told its class and the shard
// filter by flags; TLS from the mounted dynamic configuration (traefik_tls.go).
func (t Traefik) Router(in RouterInput) Router {
	r := Router{Container: corev1.Container{Name: "traefik",
		Args: traefikArgs(t.IngressClass().Name, in.RouteSelector, in.Domain, in.HTTP, in.HTTPS)}}
	if in.GatewayAPI {
		r.Container.Args = append(r.Container.Args, traefikGatewayArgs(in.RouteSelector, in.Domain)...)
	}
	if in.TLS != nil {
		r.Container.Args = append(r.Container.Args, traefikTLSArgs(in.TLS)...)
		r.Container.VolumeMounts = []corev1.VolumeMount{{Name: tlsVolume, MountPath: tlsMountPath, ReadOnly: true}}
		r.Volumes = []corev1.Volume{{Name: tlsVolume, VolumeSource: tlsVolumeSource()}}
	}
	return r
}

// TraefikArgs are a shard's router flags without TLS.
func TraefikArgs(shard, domain string, http, https int32) []string {
	return traefikArgs(Traefik{}.IngressClass().Name, ShardSelector(shard), domain, http, https)
}

func traefikArgs(class, selector, domain string, http, https int32) []string {
	return []string{
		"--providers.kubernetesingress=true",
		"--providers.kubernetesingress.ingressclass=" + class,
		"--providers.kubernetesingress.labelselector=" + selector,
		// Traefik publishes the shard's domain apex in status.loadBalancer of the Ingresses it
		// serves: the ADDRESS users see (the Flavour contract; Shardgate does not write it).
		"--providers.kubernetesingress.ingressendpoint.hostname=" + domain,
		// Apply route changes at once: allocation moves and new Ingresses serve within ~0.2 s.
		"--providers.providersThrottleDuration=0s",
		fmt.Sprintf("--entryPoints.web.address=:%d", http),
		fmt.Sprintf("--entryPoints.websecure.address=:%d", https),
		fmt.Sprintf("--entryPoints.traefik.address=:%d", traefikAdminPort),
		"--ping=true", "--ping.entryPoint=traefik",
		"--api=true",
		"--log.level=INFO",
	}
}

// traefikGatewayResources are the Gateway API kinds Traefik's Gateway provider reads (it waits for
// every one of them to be listed before it serves).
var traefikGatewayResources = []string{"gatewayclasses", "gateways", "httproutes", "grpcroutes", "tlsroutes",
	"referencegrants", "backendtlspolicies"}

func statusOf(resources []string) []string {
	out := make([]string, len(resources))
	for i, r := range resources {
		out[i] = r + "/status"
	}
	return out
}

// traefikGatewayArgs turn on Traefik's Gateway provider for the shard's GatewayClass only (its
// label selector filters GatewayClasses: the shard's carries the shard label), publishing the
// shard's domain apex as the Gateway's address.
func traefikGatewayArgs(selector, domain string) []string {
	return []string{
		"--providers.kubernetesgateway=true",
		"--providers.kubernetesgateway.labelselector=" + selector,
		"--providers.kubernetesgateway.statusaddress.hostname=" + domain,
	}
}
