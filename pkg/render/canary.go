package render

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
)

// CanaryPath is what the canary requests: the routers' own health answer ("OK"), reached
// through the same entry point, host routing and Service endpoints as any user's route.
const CanaryPath = "/ping"

// canaryObjects: a Service on the shard's routers' admin port and an Ingress for
// shardgate-canary.<domain>/ping on the shard, so that a request for the canary host travels the
// path every route does (DNS, the shard's entry point, the router's host routing, a Service
// backend) without any workload of its own.
func canaryObjects(s v1alpha1.ShardSpec, domain string, labels map[string]string) []typed {
	name := names.CanaryName(s.Name)
	svc := &corev1.Service{
		ObjectMeta: objectMeta(name, names.Namespace, labels),
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: names.RouterSelector(s.Name),
			Ports: []corev1.ServicePort{{Name: "ping", Port: traefikAdminPort, TargetPort: intstr.FromInt32(traefikAdminPort), Protocol: corev1.ProtocolTCP}}},
	}
	exact := networkingv1.PathTypeExact
	ing := &networkingv1.Ingress{
		ObjectMeta: objectMeta(name, names.Namespace, labels),
		Spec: networkingv1.IngressSpec{
			IngressClassName: ptr.To(names.IngressClassName),
			Rules: []networkingv1.IngressRule{{Host: names.CanaryHost(domain), IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{Path: CanaryPath, PathType: &exact, Backend: networkingv1.IngressBackend{
					Service: &networkingv1.IngressServiceBackend{Name: name, Port: networkingv1.ServiceBackendPort{Name: "ping"}}}}},
			}}}},
		},
	}
	return []typed{{corev1.SchemeGroupVersion.WithKind("Service"), svc}, {networkingv1.SchemeGroupVersion.WithKind("Ingress"), ing}}
}
