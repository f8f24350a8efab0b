package render

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/routerload"
)

// HAProxy renders HAProxy routers: HAProxy Technologies' Kubernetes ingress controller
// (haproxytech/kubernetes-ingress v1.11), which writes HAProxy's configuration, starts HAProxy in
// its own container (master-worker) and applies route changes through HAProxy's runtime API, with
// a reload where the runtime API cannot make one. Ingresses only: the controller serves no
// HTTPRoute (its Gateway API support is TCPRoute alone), so it has no GatewayClass.
//
// The controller takes no label selector, so the shard filter is an annotation
// (FilterByClassAnnotation): it serves an Ingress whose ingress.class annotation, of any prefix,
// equals its --ingress.class, and Shardgate writes shardgate.io/ingress.class on the Ingresses it
// allocates to the shard. The flavour's IngressClass names a controller no router runs
// (haproxy.org/ingress-controller/shardgate, while every shard runs shardgate-shard-<name>), so an
// Ingress naming the class is served only once allocated.
type HAProxy struct{}

// HAProxyImage is the default HAProxy router image: upstream's, whose controller is at
// /haproxy-ingress-controller and HAProxy at /usr/local/sbin/haproxy, the paths the controller
// runs HAProxy from (haproxyCommand skips upstream's s6 init).
const HAProxyImage = "docker.io/haproxytech/kubernetes-ingress:1.11.12"

// haproxyClusterRole is shared by every HAProxy shard.
const haproxyClusterRole = "shardgate-router-haproxy"

// HAProxy's ports behind a Service, and its health answer (HAProxy's monitor-uri frontend). The
// controller's own listeners: HAProxy's stats page (it serves HAProxy's Prometheus metrics too),
// the default backend that answers 404 for a host no route has, and the local peer.
const (
	haproxyHTTP, haproxyHTTPS int32 = 8080, 8443
	haproxyHealthz            int32 = 1042
	haproxyStats              int32 = 1024
	haproxyDefaultBackend     int32 = 6061
	haproxyLocalPeer          int32 = 10000
)

// haproxyCommand is the controller, run as the container's process (not upstream's s6 init,
// which needs a writable root): it starts HAProxy itself.
var haproxyCommand = []string{"/haproxy-ingress-controller"}

// HAProxy's writable directories (the root file system is read-only): its configuration, maps
// and certificates; its sockets and pid file; its state file across reloads; scratch space.
var haproxyDirs = []struct{ volume, path string }{
	{"haproxy-etc", "/etc/haproxy"}, {"haproxy-run", "/var/run"}, {"haproxy-state", "/var/state/haproxy"},
	{"haproxy-tmp", "/tmp"},
}

// haproxyDirLimit bounds each: configuration, maps and certificates of many routes fit.
var haproxyDirLimit = resource.MustParse("64Mi")

// haproxyRouteAnnotations are the annotations haproxytech's controller v1.11.12 reads (any prefix:
// it strips it), from Ingresses, their Services or its own ConfigMap, gathered from its source
// (TestHAProxyGuardsEveryAnnotationItReads keeps the list whole; the ConfigMap's own are in it too,
// which costs tenants nothing). Their values go into HAProxy's configuration: a route ACL is
// spliced into the shared frontend's use_backend rules, Secret names may be of another
// namespace, snippets are raw configuration, server slots size every backend.
var haproxyRouteAnnotations = []string{
	"abortonclose", "allow-list", "auth-realm", "auth-secret", "auth-type", "backend-config-snippet", "blacklist",
	"check", "check-http", "check-interval", "clean-certs", "client-ca", "client-crt-optional", "client-strict-sni",
	"config-snippet", "cookie-indirect", "cookie-nocache", "cookie-persistence", "cookie-type",
	"cors-allow-credentials", "cors-allow-headers", "cors-allow-methods", "cors-allow-origin", "cors-enable",
	"cors-max-age", "cr-backend", "cr-defaults", "cr-global", "default-backend-service", "deny-list",
	"disable-config-snippets", "dontlognull", "forwarded-for", "frontend-config-snippet", "global-config-snippet",
	"hard-stop-after", "http-connection-mode", "load-balance", "log-format", "logasap", "maxconn", "nbthread",
	"path-rewrite", "pod-maxconn", "prometheus-endpoint-auth-secret", "proxy-protocol", "quic-alt-svc-max-age",
	"rate-limit-period", "rate-limit-requests", "rate-limit-size", "rate-limit-status-code", "request-capture",
	"request-capture-len", "request-redirect", "request-redirect-code", "request-set-header", "response-set-header",
	"route-acl", "scale-server-slots", "send-proxy-protocol", "server-ca", "server-crt", "server-proto",
	"server-slots", "server-ssl", "servers-increment", "set-host", "src-ip-header", "ssl-certificate",
	"ssl-passthrough", "ssl-redirect", "ssl-redirect-code", "ssl-redirect-port", "standalone-backend",
	"stats-config-snippet", "syslog-server", "timeout-check", "timeout-client", "timeout-client-fin",
	"timeout-connect", "timeout-http-keep-alive", "timeout-http-request", "timeout-queue", "timeout-server",
	"timeout-server-fin", "timeout-tunnel", "tls-alpn", "whitelist",
}

// haproxyConfigMapOnly are those of haproxyRouteAnnotations the controller reads from its own
// ConfigMap only (v1.11.12: annotations.Global, Defaults and GlobalCfgSnipp, and the handlers,
// each given k.ConfigMaps.Main.Annotations), never from a route or a Service.
var haproxyConfigMapOnly = []string{
	"clean-certs", "client-ca", "client-crt-optional", "client-strict-sni", "cr-defaults", "cr-global",
	"default-backend-service", "disable-config-snippets", "dontlognull", "frontend-config-snippet",
	"global-config-snippet", "hard-stop-after", "http-connection-mode", "log-format", "logasap", "maxconn", "nbthread",
	"prometheus-endpoint-auth-secret", "proxy-protocol", "quic-alt-svc-max-age", "ssl-certificate",
	"stats-config-snippet", "syslog-server", "timeout-client", "timeout-client-fin", "timeout-connect",
	"timeout-http-keep-alive", "timeout-http-request", "timeout-queue", "timeout-server-fin", "timeout-tunnel",
	"tls-alpn",
}

// Name implements Flavour.
func (HAProxy) Name() v1alpha1.Flavour { return v1alpha1.FlavourHAProxy }

// ShardFilter implements Flavour: the controller takes no label selector, only an ingress.class.
func (HAProxy) ShardFilter() ShardFilter { return FilterByClassAnnotation }

// TenantGuards implements Flavour: every annotation the controller reads from a route or its
// Services (tenants share the routers' one configuration, so none of them is theirs to set),
// ExternalName Services, which the controller proxies to, and route specs it shares: paths
// (written unescaped into its line-based route maps) and default backends (the shared
// frontends'). Its own --disable-service-external-name would refuse ExternalName Services too, but
// it then ignores every one of them, the one it publishes Ingress status from (address-<shard>).
func (HAProxy) TenantGuards() TenantGuards {
	return TenantGuards{Annotations: haproxyRouteAnnotations, ConfigMapOnly: haproxyConfigMapOnly, ExternalNameServices: true,
		SharesRouteSpecs: true}
}

// IngressClass implements Flavour: the class users name; its controller is HAProxy's, under a
// class no router of a shard runs (they run names.ShardRouteClass).
func (HAProxy) IngressClass() IngressClass {
	return IngressClass{Name: "shardgate-haproxy", Controller: "haproxy.org/ingress-controller/shardgate"}
}

// GatewayClassController implements Flavour: none, the controller serves no HTTPRoute.
func (HAProxy) GatewayClassController() string { return "" }

// DefaultImage implements Flavour.
func (HAProxy) DefaultImage() string { return HAProxyImage }

// Ports implements Flavour.
func (HAProxy) Ports() Ports {
	return Ports{HTTP: haproxyHTTP, HTTPS: haproxyHTTPS, Admin: haproxyHealthz}
}

// Health implements Flavour: HAProxy's monitor-uri, which answers while HAProxy runs.
func (HAProxy) Health() HTTPGet { return HTTPGet{Path: "/healthz", Port: haproxyHealthz} }

// Readiness implements Flavour: the same answer. The controller starts HAProxy once its caches
// have synced and its first configuration is written, so HAProxy answers only then.
func (HAProxy) Readiness() HTTPGet { return HTTPGet{Path: "/healthz", Port: haproxyHealthz} }

// LoadMetrics implements Flavour: HAProxy's own Prometheus exporter, which the controller's
// configuration serves on the stats frontend; the stats and healthz frontends answer scrapes and
// probes, not routes. It exports no CPU time. Capacity: HAProxy served 1.7-1.8 times Traefik's
// requests per second through one router on this project's flavour bench (BenchmarkFlavours).
func (HAProxy) LoadMetrics() LoadMetrics {
	// Scoped: the exporter would write every backend's and server's series, which tenants'
	// Services multiply, every 5 s.
	return LoadMetrics{Path: "/metrics?scope=global&scope=frontend", Port: haproxyStats, Format: routerload.FormatHAProxy,
		AdminEntryPoint: "stats,healthz", Capacity: 3500}
}

// Canary implements Flavour: the monitor-uri's page, through the shard's entry point and host
// routing like any user's route.
func (HAProxy) Canary() Canary {
	return Canary{Path: "/healthz", Port: haproxyHealthz, Body: "<html><body><h1>200 OK</h1>\nService ready.\n</body></html>"}
}

// ClusterRole implements Flavour: what the controller watches (it lists Services, EndpointSlices,
// Secrets, ConfigMaps and Namespaces cluster-wide, its own pods, and the CRDs to find its custom
// resources) and the Ingress status it writes. No write but status: it creates no Secret.
func (HAProxy) ClusterRole() *rbacv1.ClusterRole {
	read := []string{"get", "list", "watch"}
	return &rbacv1.ClusterRole{
		ObjectMeta: objectMeta(haproxyClusterRole, "", nil),
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"services", "endpoints", "secrets", "configmaps", "namespaces",
				"pods", "nodes"}, Verbs: read},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: read},
			{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses", "ingressclasses"}, Verbs: read},
			{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses/status"}, Verbs: []string{"update"}},
			{APIGroups: []string{apiextensionsv1.GroupName}, Resources: []string{"customresourcedefinitions"}, Verbs: read},
		},
	}
}

// GatewayClusterRole implements Flavour: none.
func (HAProxy) GatewayClusterRole() *rbacv1.ClusterRole { return nil }

// Router implements Flavour: the controller, told its shard filter, ports and the shard's
// objects by flags; the pod's name and namespace from the downward API (it watches its own pods).
func (h HAProxy) Router(in RouterInput) Router {
	args := []string{
		"--ingress.class=" + in.RouteClass,
		fmt.Sprintf("--http-bind-port=%d", in.HTTP), fmt.Sprintf("--https-bind-port=%d", in.HTTPS),
		fmt.Sprintf("--healthz-bind-port=%d", haproxyHealthz), fmt.Sprintf("--stats-bind-port=%d", haproxyStats),
		fmt.Sprintf("--default-backend-port=%d", haproxyDefaultBackend),
		fmt.Sprintf("--localpeer-port=%d", haproxyLocalPeer),
		// No pprof or controller metrics listener; HAProxy's metrics are on the stats port.
		"--controller-port=0",
		// HTTP/3 would need UDP 443 and the routers serve TCP only.
		"--disable-quic",
		// No raw configuration from annotations or ConfigMaps (TenantGuards refuses them at
		// admission too).
		"--disable-config-snippets=all",
		// Route changes are applied at each sync: a second, where OpenShift's router reloads every
		// five.
		"--sync-period=1s",
		"--configmap=" + names.Namespace + "/" + haproxyConfigName(in.Shard.Name),
		// The shard's domain apex in status.loadBalancer of the Ingresses it serves, as the hostname
		// of an ExternalName Service (the Flavour contract).
		"--publish-service=" + names.Namespace + "/" + haproxyAddressName(in.Shard.Name),
	}
	if in.TLS != nil {
		args = append(args, "--default-ssl-certificate="+names.Namespace+"/"+names.TLSSecretName)
	}
	c := corev1.Container{Name: "haproxy", Command: haproxyCommand, Args: args, Env: []corev1.EnvVar{
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
	}}
	var volumes []corev1.Volume
	for _, d := range haproxyDirs {
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: d.volume, MountPath: d.path})
		volumes = append(volumes, corev1.Volume{Name: d.volume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			SizeLimit: ptr.To(haproxyDirLimit)}}})
	}
	return Router{Container: c, Volumes: volumes, Objects: h.shardObjects(in)}
}

// shardObjects are the ConfigMap the controller reads its global settings from (the redirect)
// and the ExternalName Service whose name it publishes in Ingress status. A changed redirect
// reaches the routers through the ConfigMap, without a rollout.
func (HAProxy) shardObjects(in RouterInput) []Object {
	settings := map[string]string{}
	if in.TLS != nil && in.TLS.RedirectHTTP {
		// To port 443 whatever the container port: clients reach every router on 443 (the host
		// port, or the Service port). Permanent, as Traefik's.
		settings = map[string]string{"ssl-redirect": "true", "ssl-redirect-port": "443", "ssl-redirect-code": "308"}
	}
	cm := &corev1.ConfigMap{ObjectMeta: objectMeta(haproxyConfigName(in.Shard.Name), names.Namespace, nil), Data: settings}
	svc := &corev1.Service{ObjectMeta: objectMeta(haproxyAddressName(in.Shard.Name), names.Namespace, nil),
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: in.Domain}}
	return []Object{{corev1.SchemeGroupVersion.WithKind("ConfigMap"), cm}, {corev1.SchemeGroupVersion.WithKind("Service"), svc}}
}

// The shard's ConfigMap and ExternalName Service. Not router-<shard>-…: that would be another
// shard's router-<name> (a shard may be named "x-address").
func haproxyConfigName(shard string) string  { return "haproxy-" + shard }
func haproxyAddressName(shard string) string { return "address-" + shard }

// TLSObjects implements Flavour: none. The controller reads the key pair Secret through the API
// (--default-ssl-certificate) and applies a renewed one at its next sync, without a rollout.
func (HAProxy) TLSObjects(*TLSInput) []Object { return nil }
