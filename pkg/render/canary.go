package render

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// CanaryPath is what the canary requests: the routers' own health answer ("OK"), reached
// through the same entry point, host routing and Service endpoints as any user's route.
const CanaryPath = "/ping"

// canaryObjects: a Service on the shard's routers' admin port and a route for
// shardgate-canary.<domain>/ping on the shard, of each route kind that routes the shard's canary
// (an Ingress), so that a request for the canary host travels the path every route does (DNS,
// the shard's entry point, the router's host routing, a Service backend) without any workload of
// its own.
func canaryObjects(s v1alpha1.ShardSpec, domain string, labels map[string]string, kinds routekinds.Registry,
) ([]typed, error) {
	name := names.CanaryName(s.Name)
	svc := &corev1.Service{
		ObjectMeta: objectMeta(name, names.Namespace, labels),
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: names.RouterSelector(s.Name),
			Ports: []corev1.ServicePort{{Name: "ping", Port: traefikAdminPort, TargetPort: intstr.FromInt32(traefikAdminPort), Protocol: corev1.ProtocolTCP}}},
	}
	objs := []typed{{corev1.SchemeGroupVersion.WithKind("Service"), svc}}
	c := routekinds.Canary{Shard: s, Meta: objectMeta(name, names.Namespace, labels), Host: names.CanaryHost(domain),
		Path: CanaryPath, Service: name, Port: "ping"}
	for _, k := range kinds {
		if route := k.CanaryRoute(c); route != nil {
			objs = append(objs, typed{k.GroupVersionKind(), route})
		}
	}
	if len(objs) == 1 {
		return nil, fmt.Errorf("no route kind routes shard %s's canary", s.Name)
	}
	return objs, nil
}
