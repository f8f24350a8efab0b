package render

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// canaryObjects: a Service on the shard's routers' canary port and a route for
// shardgate-canary.<domain><path> on the shard, of each route kind that routes the shard's canary
// (an Ingress of the flavour's class; with gateway, the shard's routers serving its Gateway, an
// HTTPRoute for shardgate-canary-gateway.<domain> through it too), so that a request for the
// canary host travels the path every route does (DNS, the shard's entry point, the router's host
// routing, a Service backend) without any workload of its own. The flavour says what is asked and
// answered.
func canaryObjects(f Flavour, s v1alpha1.ShardSpec, domain string, labels map[string]string, kinds routekinds.Registry,
	gateway bool) ([]Object, error) {
	name := names.CanaryName(s.Name)
	fc := f.Canary()
	svc := &corev1.Service{
		ObjectMeta: objectMeta(name, names.Namespace, labels),
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: names.RouterSelector(s.Name),
			Ports: []corev1.ServicePort{{Name: "ping", Port: fc.Port, TargetPort: intstr.FromInt32(fc.Port),
				Protocol: corev1.ProtocolTCP}}},
	}
	objs := []Object{{corev1.SchemeGroupVersion.WithKind("Service"), svc}}
	meta := objectMeta(name, names.Namespace, labels)
	if class := ShardRouteClass(s); class != "" {
		// The shard filter of routers that take no label selector (Flavour.ShardFilter).
		meta.Annotations = map[string]string{v1alpha1.ShardClassAnnotation: class}
	}
	c := routekinds.Canary{Shard: s, Meta: meta, Host: names.CanaryHost(domain),
		Path: fc.Path, Service: name, Port: "ping", PortNumber: fc.Port, IngressClass: f.IngressClass().Name}
	if gateway {
		c.GatewayHost = names.CanaryGatewayHost(domain)
	}
	for _, k := range kinds {
		if route := k.CanaryRoute(c); route != nil {
			objs = append(objs, Object{k.GroupVersionKind(), route})
		}
	}
	if len(objs) == 1 {
		return nil, fmt.Errorf("no route kind routes shard %s's canary", s.Name)
	}
	return objs, nil
}
