package render

import (
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
)

// The unprivileged user and group Service-backed routers run as (the distroless images' nonroot).
const routerUser, routerGroup = 65532, 65532

// HostNetwork routers bind the node's 80 and 443, where clients reach every router; the others
// listen on their flavour's unprivileged Ports behind their Service's 80 and 443.
const HostHTTP, HostHTTPS = 80, 443

// RenderShard renders one shard's routers with flavour f: its own parts (the router container,
// its role, its TLS wiring) in the shape every router shares.
func RenderShard(f Flavour, in RenderInput) ([]*unstructured.Unstructured, error) {
	s := in.Shard
	name := names.RouterName(s.Name)
	labels := managedLabels(s.Name)
	ports := listenPorts(f, s)
	role := routerRole(f)
	router := f.Router(RouterInput{Shard: s, Domain: in.Domain, HTTP: ports.HTTP, HTTPS: ports.HTTPS,
		RouteSelector: ShardSelector(s.Name), RouteClass: ShardRouteClass(s), TLS: in.TLS, GatewayAPI: in.GatewayAPI})
	if ReportsLoad(f, s) {
		router.Container.Args = append(router.Container.Args, f.LoadMetrics().Args...)
	}
	objs := []Object{
		{corev1.SchemeGroupVersion.WithKind("ServiceAccount"),
			&corev1.ServiceAccount{ObjectMeta: objectMeta(name, names.Namespace, labels)}},
		{rbacv1.SchemeGroupVersion.WithKind("ClusterRole"), role},
		{rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"), &rbacv1.ClusterRoleBinding{
			ObjectMeta: objectMeta("shardgate-"+name, "", labels),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: names.Namespace}},
		}},
		{appsv1.SchemeGroupVersion.WithKind("Deployment"), deployment(f, in, router, name, labels, ports)},
	}
	for _, o := range router.Objects {
		if m, ok := o.Obj.(metav1.Object); ok {
			m.SetLabels(labels)
		}
		objs = append(objs, o)
	}
	if svc := service(s, name, labels, ports.HTTP, ports.HTTPS); svc != nil {
		objs = append(objs, Object{corev1.SchemeGroupVersion.WithKind("Service"), svc})
	}
	if pdb := disruptionBudget(s, name, labels); pdb != nil {
		objs = append(objs, Object{policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"), pdb})
	}
	if in.GatewayAPI && f.GatewayClassController() != "" {
		objs = append(objs, shardGateway(f, in, labels, ports)...)
		objs = append(objs, gatewayRole(f, name, labels)...)
	}
	if in.Canary {
		canary, err := canaryObjects(f, s, in.Domain, labels, in.RouteKinds, in.GatewayAPI && f.GatewayClassController() != "")
		if err != nil {
			return nil, err
		}
		objs = append(objs, canary...)
	}
	if ReportsLoad(f, s) {
		objs = append(objs, loadObjects(name, labels)...)
	}
	if s.Publishing == v1alpha1.PublishVIP {
		v, err := vipObjects(s, in.VIP, labels)
		if err != nil {
			return nil, err
		}
		objs = append(objs, v...)
	}
	return toUnstructured(objs...)
}

// listenPorts are the router's ports for a shard: the node's 80 and 443 on the host network.
func listenPorts(f Flavour, s v1alpha1.ShardSpec) Ports {
	p := f.Ports()
	if onHostNetwork(s) {
		p.HTTP, p.HTTPS = HostHTTP, HostHTTPS
	}
	return p
}

// routerRole is the flavour's ClusterRole, labelled as Shardgate's (pruning and the cache go by
// the label).
func routerRole(f Flavour) *rbacv1.ClusterRole { return labelledRole(f.ClusterRole()) }

func labelledRole(role *rbacv1.ClusterRole) *rbacv1.ClusterRole {
	r := role.DeepCopy()
	r.Labels = managedLabels("")
	return r
}

// gatewayRole binds a shard's routers to the flavour's Gateway role as well.
func gatewayRole(f Flavour, name string, labels map[string]string) []Object {
	role := f.GatewayClusterRole()
	if role == nil {
		return nil
	}
	return []Object{{rbacv1.SchemeGroupVersion.WithKind("ClusterRole"), labelledRole(role)},
		{rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"), &rbacv1.ClusterRoleBinding{
			ObjectMeta: objectMeta("shardgate-"+name+"-gateway", "", labels),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: names.Namespace}},
		}}}
}

// ShardSelector is the shard filter: the label selector of the routes a shard's routers serve.
func ShardSelector(shard string) string { return v1alpha1.ShardLabel + "=" + shard }

func deployment(f Flavour, in RenderInput, router Router, name string, labels map[string]string, ports Ports,
) *appsv1.Deployment {
	s := in.Shard
	replicas := *s.Replicas
	image := s.Image
	if image == "" {
		image = f.DefaultImage()
	}
	hostNet := onHostNetwork(s)
	// The router keeps serving while DNS drops its node: one TTL plus Shardgate's and
	// external-dns' reaction time.
	preStop := in.DNSTTL + 15
	container := router.Container
	container.Image, container.ImagePullPolicy = image, s.ImagePullPolicy
	container.Ports = []corev1.ContainerPort{
		{Name: "web", ContainerPort: ports.HTTP, Protocol: corev1.ProtocolTCP},
		{Name: "websecure", ContainerPort: ports.HTTPS, Protocol: corev1.ProtocolTCP},
		{Name: "admin", ContainerPort: ports.Admin, Protocol: corev1.ProtocolTCP},
	}
	container.Resources = s.Resources
	container.ReadinessProbe = &corev1.Probe{ProbeHandler: httpGet(f.Readiness()), PeriodSeconds: readinessPeriod,
		FailureThreshold: 2}
	container.LivenessProbe = &corev1.Probe{ProbeHandler: httpGet(f.Health()), PeriodSeconds: 10, FailureThreshold: 3}
	container.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: preStop}}}
	container.SecurityContext = routerSecurityContext(hostNet)
	pod := corev1.PodSpec{
		ServiceAccountName:            name,
		HostNetwork:                   hostNet,
		NodeSelector:                  s.NodeSelector,
		Tolerations:                   tolerations(s),
		TerminationGracePeriodSeconds: ptr.To(preStop + 30),
		Containers:                    []corev1.Container{container},
		Volumes:                       router.Volumes,
	}
	if hostNet {
		pod.DNSPolicy = corev1.DNSClusterFirstWithHostNet
	}
	if len(router.Volumes) > 0 {
		pod.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr.To[int64](routerGroup)}
	}
	if s.Publishing == v1alpha1.PublishVIP {
		pod.Containers = append(pod.Containers, vipContainers(s, routerURL(f), f.Readiness().Settle)...)
		pod.Volumes = append(pod.Volumes, keepalivedVolumes()...)
	}
	if ReportsLoad(f, s) {
		pod.Containers = append(pod.Containers, loadReporter(f, s))
	}
	// The router watches its routes, Services, EndpointSlices and Secrets; the VIP agent reads its
	// ConfigMap and writes Leases, the load reporter writes its Lease. keepalived calls no API.
	withAPIToken(&pod, container.Name, vipAgentName, loadReporterName)
	strategy := appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
		// Surge first so capacity never drops; host ports cannot surge onto the same node, so
		// HostNetwork routers replace one at a time instead.
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(1)),
			MaxUnavailable: ptr.To(intstr.FromInt32(0))}}
	if hostNet {
		strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(0)),
			MaxUnavailable: ptr.To(intstr.FromInt32(1))}
	}
	if spreads(s) {
		sel := &metav1.LabelSelector{MatchLabels: names.RouterSelector(s.Name)}
		pod.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
				{LabelSelector: sel, TopologyKey: corev1.LabelHostname}},
		}}
		pod.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: sel,
		}}
	}
	return &appsv1.Deployment{
		ObjectMeta: objectMeta(name, names.Namespace, labels),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: names.RouterSelector(s.Name)},
			Strategy: strategy,
			// A rollout replaces the next router only once the last new one has settled (DNS
			// publishes it then). Outside the pod template, so it replaces no router itself.
			MinReadySeconds: int32(f.Readiness().Settle / time.Second),
			Template:        corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod},
		},
	}
}

func httpGet(g HTTPGet) corev1.ProbeHandler {
	return corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: g.Path, Port: intstr.FromInt32(g.Port)}}
}

// readinessPeriod is the routers' readiness probe period.
const readinessPeriod = 5

// routerURL is where the VIP agent asks whether the router on its node serves: the flavour's
// readiness, on the node's loopback (VIP routers run on the host network).
func routerURL(f Flavour) string {
	r := f.Readiness()
	return fmt.Sprintf("http://127.0.0.1:%d%s", r.Port, r.Path)
}

// routerSecurityContext is the least privilege a router can serve with.
//
// Behind a Service (NodePort, LoadBalancer) the router listens on unprivileged ports and runs as
// uid 65532 with no capabilities at all. On the host network it must bind the node's 80 and 443,
// which takes CAP_NET_BIND_SERVICE in the effective set; Kubernetes sets no ambient capabilities,
// so for a non-root process an added capability lands only in the bounding set and the bind
// fails with EACCES. Root gets its bounding set, so a HostNetwork router runs as uid 0 with every
// capability dropped but NET_BIND_SERVICE, no privilege escalation and a read-only root file
// system: it can bind low ports and nothing else root could (the way ingress-nginx and Traefik's
// own chart run host-port routers). A file capability on the binary would allow a non-root user,
// but it depends on the image; this works with any flavour's image.
func routerSecurityContext(hostNet bool) *corev1.SecurityContext {
	sc := &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
		RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](routerUser), RunAsGroup: ptr.To[int64](routerGroup),
		Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	if hostNet {
		sc.RunAsNonRoot, sc.RunAsUser, sc.RunAsGroup = ptr.To(false), ptr.To[int64](0), ptr.To[int64](0)
		sc.Capabilities.Add = []corev1.Capability{"NET_BIND_SERVICE"}
	}
	return sc
}

// onHostNetwork: HostNetwork, VIP and RoutedIP routers bind the node's ports (a VIP or routed IP
// lands on the node, so the router must listen there).
func onHostNetwork(s v1alpha1.ShardSpec) bool {
	return s.Publishing == v1alpha1.PublishHostNetwork || s.Publishing == v1alpha1.PublishVIP ||
		s.Publishing == v1alpha1.PublishRoutedIP
}

// tolerations are the shard's, and for RoutedIP shards the holder taint: the node that holds a
// routed IP must keep taking the routers that serve it.
func tolerations(s v1alpha1.ShardSpec) []corev1.Toleration {
	if s.Publishing != v1alpha1.PublishRoutedIP {
		return s.Tolerations
	}
	return append(slices.Clone(s.Tolerations), corev1.Toleration{Key: v1alpha1.RoutedIPTaintKey,
		Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectPreferNoSchedule})
}

func service(s v1alpha1.ShardSpec, name string, labels map[string]string, http, https int32) *corev1.Service {
	var typ corev1.ServiceType
	switch s.Publishing {
	case v1alpha1.PublishNodePort:
		typ = corev1.ServiceTypeNodePort
	case v1alpha1.PublishLoadBalancer:
		typ = corev1.ServiceTypeLoadBalancer
	case v1alpha1.PublishRoutedIP:
		// The Service the shard's RoutedIPs name: its endpoints say which nodes run a ready router.
		typ = corev1.ServiceTypeClusterIP
	default:
		return nil
	}
	if typ == corev1.ServiceTypeClusterIP {
		return &corev1.Service{
			ObjectMeta: objectMeta(name, names.Namespace, labels),
			Spec: corev1.ServiceSpec{
				Type: typ, Selector: names.RouterSelector(s.Name),
				Ports: []corev1.ServicePort{
					{Name: "web", Port: http, TargetPort: intstr.FromInt32(http), Protocol: corev1.ProtocolTCP},
					{Name: "websecure", Port: https, TargetPort: intstr.FromInt32(https), Protocol: corev1.ProtocolTCP},
				},
			},
		}
	}
	return &corev1.Service{
		ObjectMeta: objectMeta(name, names.Namespace, labels),
		Spec: corev1.ServiceSpec{
			Type:     typ,
			Selector: names.RouterSelector(s.Name),
			// Keep the client address and skip the second hop.
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			Ports: []corev1.ServicePort{
				{Name: "web", Port: 80, TargetPort: intstr.FromInt32(http), Protocol: corev1.ProtocolTCP},
				{Name: "websecure", Port: 443, TargetPort: intstr.FromInt32(https), Protocol: corev1.ProtocolTCP},
			},
		},
	}
}

// disruptionBudget: at most one router down at 2 replicas, a quarter at 3 or more; none for one
// replica (a budget there would block node drains forever).
func disruptionBudget(s v1alpha1.ShardSpec, name string, labels map[string]string) *policyv1.PodDisruptionBudget {
	r := *s.Replicas
	if !spreads(s) {
		return nil
	}
	maxUnavailable := intstr.FromInt32(1)
	if r >= 3 {
		maxUnavailable = intstr.FromString("25%")
	}
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: objectMeta(name, names.Namespace, labels),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: &maxUnavailable,
			Selector:       &metav1.LabelSelector{MatchLabels: names.RouterSelector(s.Name)},
		},
	}
}

func objectMeta(name, ns string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}
}

// spreads says whether a shard's routers spread one per node behind a disruption budget: with 2
// or more replicas, or when they follow load up to 2 or more, so that following load changes the
// replica count only, never the pod template (which would replace every router).
func spreads(s v1alpha1.ShardSpec) bool {
	return *s.Replicas >= 2 || (s.Load != nil && s.Load.MaxReplicas != nil && *s.Load.MaxReplicas >= 2)
}
