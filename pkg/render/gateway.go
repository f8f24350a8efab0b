package render

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/pkg/gatewayapi"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// ParentGatewayController is the controllerName of the parent Gateway's class: Shardgate's
// allocator, which no router is. The parent is where tenants attach routes; it serves nothing
// itself (allocation adds the shard's Gateway to each route it allocates).
const ParentGatewayController = routekinds.ParentController

// Listener names of a shard's Gateway (sectionName in a route's parentRef).
const (
	ListenerHTTP  = "http"
	ListenerHTTPS = "https"
)

var gatewayGVK = gatewayapi.GroupVersion.WithKind("Gateway")
var gatewayClassGVK = gatewayapi.GroupVersion.WithKind("GatewayClass")

// ParentGateway is the Gateway tenants attach their routes to (names.ParentGatewayName) and its
// class. It has one HTTP listener because a Gateway must have one; no router serves its class.
func ParentGateway() ([]*unstructured.Unstructured, error) {
	labels := managedLabels("")
	class := &gatewayv1.GatewayClass{ObjectMeta: objectMeta(names.ParentGatewayClassName, "", labels),
		Spec: gatewayv1.GatewayClassSpec{ControllerName: ParentGatewayController}}
	gw := &gatewayv1.Gateway{ObjectMeta: objectMeta(names.ParentGatewayName, names.Namespace, labels),
		Spec: gatewayv1.GatewaySpec{GatewayClassName: names.ParentGatewayClassName,
			Listeners: []gatewayv1.Listener{{Name: ListenerHTTP, Port: HostHTTP, Protocol: gatewayv1.HTTPProtocolType,
				AllowedRoutes: allRoutes()}}}}
	return toUnstructured(Object{gatewayClassGVK, class}, Object{gatewayGVK, gw})
}

// shardGateway is a shard's GatewayClass (of the flavour's Gateway controller, labelled with the
// shard: the shard's routers serve only the classes with their label) and its Gateway: HTTP and,
// with the cluster's certificate, HTTPS on the ports the routers listen on, for the names under
// the shard's domain. Routes of every namespace may attach: which ones do is allocation's mark
// on the route (the parentRef it adds), protected like the shard label.
func shardGateway(f Flavour, in RenderInput, labels map[string]string, ports Ports) []Object {
	class := &gatewayv1.GatewayClass{ObjectMeta: objectMeta(names.ShardGatewayClassName(in.Shard.Name), "", labels),
		Spec: gatewayv1.GatewayClassSpec{ControllerName: gatewayv1.GatewayController(f.GatewayClassController())}}
	host := ptr.To(gatewayv1.Hostname("*." + in.Domain))
	listeners := []gatewayv1.Listener{{Name: ListenerHTTP, Hostname: host, Port: ports.HTTP,
		Protocol: gatewayv1.HTTPProtocolType, AllowedRoutes: httpRoutesOnly()}}
	if in.TLS != nil {
		listeners = append(listeners, gatewayv1.Listener{Name: ListenerHTTPS, Hostname: host,
			Port: ports.HTTPS, Protocol: gatewayv1.HTTPSProtocolType, AllowedRoutes: httpRoutesOnly(),
			TLS: &gatewayv1.ListenerTLSConfig{Mode: ptr.To(gatewayv1.TLSModeTerminate),
				CertificateRefs: []gatewayv1.SecretObjectReference{{Name: names.TLSSecretName}}}})
	}
	gw := &gatewayv1.Gateway{ObjectMeta: objectMeta(names.ShardGatewayName(in.Shard.Name), names.Namespace, labels),
		Spec: gatewayv1.GatewaySpec{GatewayClassName: gatewayv1.ObjectName(class.Name), Listeners: listeners}}
	return []Object{{gatewayClassGVK, class}, {gatewayGVK, gw}}
}

// httpRoutesOnly: a shard's listeners take HTTPRoutes only, the one kind allocation allocates and
// the admission policy guards (HTTP listeners take GRPCRoutes too by default, which nothing checks).
func httpRoutesOnly() *gatewayv1.AllowedRoutes {
	r := allRoutes()
	r.Kinds = []gatewayv1.RouteGroupKind{{Group: ptr.To(gatewayv1.Group(gatewayv1.GroupName)), Kind: "HTTPRoute"}}
	return r
}

func allRoutes() *gatewayv1.AllowedRoutes {
	return &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: ptr.To(gatewayv1.NamespacesFromAll)}}
}
