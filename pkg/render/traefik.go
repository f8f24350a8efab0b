package render

import (
	"fmt"
	"slices"

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

// Traefik renders Traefik v3 routers. All shards share the shardgate IngressClass (Traefik reads
// only classes whose controller is its own) and each serves only Ingresses labelled
// shardgate.io/shard=<shard>.
type Traefik struct{}

// TraefikImage is the default router image.
const TraefikImage = "docker.io/library/traefik:v3.7.12"

// The unprivileged user and group Service-backed routers run as (the official image's nonroot).
const routerUser, routerGroup = 65532, 65532

// traefikClusterRole is shared by every Traefik shard.
const traefikClusterRole = "shardgate-router-traefik"

// Container ports. HostNetwork routers bind the node's 80/443; the others use unprivileged ports
// behind their Service.
const (
	hostHTTP, hostHTTPS       = 80, 443
	podHTTP, podHTTPS         = 8000, 8443
	traefikAdminPort    int32 = 9000
)

// IngressClassController implements Flavour.
func (Traefik) IngressClassController() string { return "traefik.io/ingress-controller" }

// Render implements Flavour.
func (t Traefik) Render(in RenderInput) ([]*unstructured.Unstructured, error) {
	s := in.Shard
	name := names.RouterName(s.Name)
	labels := managedLabels(s.Name)
	http, https := int32(podHTTP), int32(podHTTPS)
	if onHostNetwork(s) {
		http, https = hostHTTP, hostHTTPS
	}
	objs := []typed{
		{corev1.SchemeGroupVersion.WithKind("ServiceAccount"), &corev1.ServiceAccount{ObjectMeta: objectMeta(name, names.Namespace, labels)}},
		{rbacv1.SchemeGroupVersion.WithKind("ClusterRole"), traefikRole()},
		{rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"), &rbacv1.ClusterRoleBinding{
			ObjectMeta: objectMeta("shardgate-"+name, "", labels),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: traefikClusterRole},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: names.Namespace}},
		}},
		{appsv1.SchemeGroupVersion.WithKind("Deployment"), t.deployment(in, name, labels, http, https)},
	}
	if svc := service(s, name, labels, http, https); svc != nil {
		objs = append(objs, typed{corev1.SchemeGroupVersion.WithKind("Service"), svc})
	}
	if pdb := disruptionBudget(s, name, labels); pdb != nil {
		objs = append(objs, typed{policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"), pdb})
	}
	if in.Canary {
		canary, err := canaryObjects(s, in.Domain, labels, in.RouteKinds)
		if err != nil {
			return nil, err
		}
		objs = append(objs, canary...)
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

// TraefikArgs are the router's flags. Tests run real Traefik processes with exactly these.
func TraefikArgs(shard, domain string, http, https int32) []string {
	return []string{
		"--providers.kubernetesingress=true",
		"--providers.kubernetesingress.ingressclass=" + names.IngressClassName,
		"--providers.kubernetesingress.labelselector=" + v1alpha1.ShardLabel + "=" + shard,
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

func (Traefik) deployment(in RenderInput, name string, labels map[string]string, http, https int32) *appsv1.Deployment {
	s := in.Shard
	replicas := *s.Replicas
	image := s.Image
	if image == "" {
		image = TraefikImage
	}
	hostNet := onHostNetwork(s)
	// The router keeps serving while DNS drops its node: one TTL plus Shardgate's and
	// external-dns' reaction time.
	preStop := in.DNSTTL + 15
	probe := &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ping", Port: intstr.FromInt32(traefikAdminPort)}},
		PeriodSeconds: 5, FailureThreshold: 2,
	}
	args := TraefikArgs(s.Name, in.Domain, http, https)
	if in.TLS != nil {
		args = append(args, traefikTLSArgs(in.TLS)...)
	}
	container := corev1.Container{
		Name: "traefik", Image: image, ImagePullPolicy: s.ImagePullPolicy,
		Args: args,
		Ports: []corev1.ContainerPort{
			{Name: "web", ContainerPort: http, Protocol: corev1.ProtocolTCP},
			{Name: "websecure", ContainerPort: https, Protocol: corev1.ProtocolTCP},
			{Name: "admin", ContainerPort: traefikAdminPort, Protocol: corev1.ProtocolTCP},
		},
		Resources:       s.Resources,
		ReadinessProbe:  probe,
		LivenessProbe:   &corev1.Probe{ProbeHandler: probe.ProbeHandler, PeriodSeconds: 10, FailureThreshold: 3},
		Lifecycle:       &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: preStop}}},
		SecurityContext: routerSecurityContext(hostNet),
	}
	pod := corev1.PodSpec{
		ServiceAccountName:            name,
		HostNetwork:                   hostNet,
		NodeSelector:                  s.NodeSelector,
		Tolerations:                   tolerations(s),
		TerminationGracePeriodSeconds: ptr.To(preStop + 30),
		Containers:                    []corev1.Container{container},
	}
	if hostNet {
		pod.DNSPolicy = corev1.DNSClusterFirstWithHostNet
	}
	if in.TLS != nil {
		pod.Volumes = []corev1.Volume{{Name: tlsVolume, VolumeSource: tlsVolumeSource()}}
		pod.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: tlsVolume, MountPath: tlsMountPath, ReadOnly: true}}
		pod.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr.To[int64](routerGroup)}
	}
	if s.Publishing == v1alpha1.PublishVIP {
		pod.Containers = append(pod.Containers, vipContainers(s)...)
		pod.Volumes = append(pod.Volumes, keepalivedVolumes()...)
	}
	// Traefik watches Ingresses, Services, EndpointSlices and Secrets; the VIP agent reads its
	// ConfigMap and writes Leases. keepalived calls no API.
	withAPIToken(&pod, container.Name, vipAgentName)
	strategy := appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
		// Surge first so capacity never drops; host ports cannot surge onto the same node, so
		// HostNetwork routers replace one at a time instead.
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0))}}
	if hostNet {
		strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(0)), MaxUnavailable: ptr.To(intstr.FromInt32(1))}
	}
	if replicas >= 2 {
		sel := &metav1.LabelSelector{MatchLabels: names.RouterSelector(s.Name)}
		pod.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{LabelSelector: sel, TopologyKey: corev1.LabelHostname}},
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
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod},
		},
	}
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
// but it depends on the image; this works with the official one.
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
	return s.Publishing == v1alpha1.PublishHostNetwork || s.Publishing == v1alpha1.PublishVIP || s.Publishing == v1alpha1.PublishRoutedIP
}

// tolerations are the shard's, and for RoutedIP shards the holder taint: the node that holds a
// routed IP must keep taking the routers that serve it.
func tolerations(s v1alpha1.ShardSpec) []corev1.Toleration {
	if s.Publishing != v1alpha1.PublishRoutedIP {
		return s.Tolerations
	}
	return append(slices.Clone(s.Tolerations), corev1.Toleration{Key: v1alpha1.RoutedIPTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectPreferNoSchedule})
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
	if r < 2 {
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

func traefikRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: objectMeta(traefikClusterRole, "", managedLabels("")),
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"services", "secrets", "nodes"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses", "ingressclasses"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses/status"}, Verbs: []string{"update"}},
		},
	}
}

func objectMeta(name, ns string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}
}
