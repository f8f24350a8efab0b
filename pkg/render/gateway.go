package render

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/shardgate/shardgate/pkg/gatewayapi"
	"github.com/shardgate/shardgate/pkg/listenersets"
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

// ParentGateway is the Gateway tenants attach their routes and ListenerSets to
// (names.ParentGatewayName) and its class. It has one HTTP listener because a Gateway must have
// one; no router serves its class. Where the cluster serves ListenerSets, those of every namespace
// may attach: Shardgate merges each listener into the Gateway of the shard that serves its host,
// once the host is its namespace's (listenersets.Decide). An older Gateway CRD has no such field,
// and an apply naming it would be refused.
func ParentGateway(listenerSets bool) ([]*unstructured.Unstructured, error) {
	labels := managedLabels("")
	class := &gatewayv1.GatewayClass{ObjectMeta: objectMeta(names.ParentGatewayClassName, "", labels),
		Spec: gatewayv1.GatewayClassSpec{ControllerName: ParentGatewayController}}
	gw := &gatewayv1.Gateway{ObjectMeta: objectMeta(names.ParentGatewayName, names.Namespace, labels),
		Spec: gatewayv1.GatewaySpec{GatewayClassName: names.ParentGatewayClassName,
			Listeners: []gatewayv1.Listener{{Name: ListenerHTTP, Port: HostHTTP, Protocol: gatewayv1.HTTPProtocolType,
				AllowedRoutes: allRoutes()}}}}
	if listenerSets {
		gw.Spec.AllowedListeners = &gatewayv1.AllowedListeners{Namespaces: &gatewayv1.ListenerNamespaces{
			From: ptr.To(gatewayv1.NamespacesFromAll)}}
	}
	return toUnstructured(Object{gatewayClassGVK, class}, Object{gatewayGVK, gw})
}

// ListenerGrantName is the ReferenceGrant in a tenant's namespace that lets the shards' Gateways
// read the Secrets its ListenerSets name.
const ListenerGrantName = "shardgate-listenersets"

var referenceGrantGVK = schema.GroupVersionKind{Group: gatewayv1.GroupName, Version: "v1beta1", Kind: "ReferenceGrant"}

// ListenerGrants are, per namespace, the ReferenceGrant letting Gateways of Shardgate's namespace
// read exactly the Secrets of that namespace its tenants' listeners name (listenersets.Decide):
// Gateway API lets a Gateway read a Secret of another namespace only so. Shardgate itself never
// reads them; the routers do, as they read an Ingress's spec.tls Secrets.
func ListenerGrants(grants map[string][]string) (map[string][]*unstructured.Unstructured, error) {
	out := map[string][]*unstructured.Unstructured{}
	for ns, secrets := range grants {
		g := &gatewayv1beta1.ReferenceGrant{ObjectMeta: objectMeta(ListenerGrantName, ns, managedLabels("")),
			Spec: gatewayv1beta1.ReferenceGrantSpec{From: []gatewayv1beta1.ReferenceGrantFrom{{Group: gatewayv1.GroupName,
				Kind: "Gateway", Namespace: names.Namespace}}}}
		for _, name := range secrets {
			g.Spec.To = append(g.Spec.To, gatewayv1beta1.ReferenceGrantTo{Group: "", Kind: "Secret",
				Name: ptr.To(gatewayv1.ObjectName(name))})
		}
		objs, err := toUnstructured(Object{referenceGrantGVK, g})
		if err != nil {
			return nil, err
		}
		out[ns] = objs
	}
	return out, nil
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
		Protocol: gatewayv1.HTTPProtocolType, AllowedRoutes: allocatedRoutes(in.RouteKinds)}}
	if in.TLS != nil {
		listeners = append(listeners, gatewayv1.Listener{Name: ListenerHTTPS, Hostname: host,
			Port: ports.HTTPS, Protocol: gatewayv1.HTTPSProtocolType, AllowedRoutes: allocatedRoutes(in.RouteKinds),
			TLS: &gatewayv1.ListenerTLSConfig{Mode: ptr.To(gatewayv1.TLSModeTerminate),
				CertificateRefs: []gatewayv1.SecretObjectReference{{Name: names.TLSSecretName}}}})
	}
	listeners = append(listeners, tenantListeners(in.TenantListeners, in.RouteKinds, ports)...)
	gw := &gatewayv1.Gateway{ObjectMeta: objectMeta(names.ShardGatewayName(in.Shard.Name), names.Namespace, labels),
		Spec: gatewayv1.GatewaySpec{GatewayClassName: gatewayv1.ObjectName(class.Name), Listeners: listeners}}
	return []Object{{gatewayClassGVK, class}, {gatewayGVK, gw}}
}

// tenantListeners are tenants' listeners as the shard's Gateway takes them: on the routers' ports,
// for the routes of their own namespace only, with certificates of that namespace.
func tenantListeners(ls []listenersets.Listener, kinds routekinds.Registry, ports Ports) []gatewayv1.Listener {
	var out []gatewayv1.Listener
	for _, l := range ls {
		allowed := allocatedRoutes(kinds)
		allowed.Namespaces = &gatewayv1.RouteNamespaces{From: ptr.To(gatewayv1.NamespacesFromSelector),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: l.Namespace}}}
		gl := gatewayv1.Listener{Name: gatewayv1.SectionName(l.Name), Hostname: ptr.To(gatewayv1.Hostname(l.Hostname)),
			Port: ports.HTTP, Protocol: gatewayv1.HTTPProtocolType, AllowedRoutes: allowed}
		if l.HTTPS {
			gl.Port, gl.Protocol = ports.HTTPS, gatewayv1.HTTPSProtocolType
			gl.TLS = &gatewayv1.ListenerTLSConfig{Mode: ptr.To(gatewayv1.TLSModeTerminate)}
			for _, sec := range l.Secrets {
				gl.TLS.CertificateRefs = append(gl.TLS.CertificateRefs, gatewayv1.SecretObjectReference{
					Name: gatewayv1.ObjectName(sec), Namespace: ptr.To(gatewayv1.Namespace(l.Namespace))})
			}
		}
		out = append(out, gl)
	}
	return out
}

// allocatedRoutes: a shard's listeners take the AllocatedRouteKinds only.
func allocatedRoutes(kinds routekinds.Registry) *gatewayv1.AllowedRoutes {
	r := allRoutes()
	r.Kinds = AllocatedRouteKinds(kinds)
	return r
}

// AllocatedRouteKinds are the kinds a shard's listeners take: the Gateway API kinds among the
// cluster's route kinds, which allocation allocates and the admission policy guards, and
// HTTPRoutes (every shard's Gateway canary is one). A listener naming no kinds would take every
// kind its protocol allows: GRPCRoutes where nothing allocated or guarded them (their CRD served,
// their kind not Shardgate's to list), attached to a shard's Gateway by hand for any host.
func AllocatedRouteKinds(kinds routekinds.Registry) []gatewayv1.RouteGroupKind {
	out := []gatewayv1.RouteGroupKind{{Group: ptr.To(gatewayv1.Group(gatewayv1.GroupName)), Kind: "HTTPRoute"}}
	for _, k := range kinds {
		if gvk := k.GroupVersionKind(); gvk.Group == gatewayv1.GroupName && gvk.Kind != "HTTPRoute" {
			out = append(out, gatewayv1.RouteGroupKind{Group: ptr.To(gatewayv1.Group(gvk.Group)), Kind: gatewayv1.Kind(gvk.Kind)})
		}
	}
	return out
}

func allRoutes() *gatewayv1.AllowedRoutes {
	return &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: ptr.To(gatewayv1.NamespacesFromAll)}}
}
