package routekinds

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// BackendServices are the names of the Services an Ingress sends to (its default backend's and its
// rules'), in its namespace, sorted; none for a route of another kind.
func BackendServices(o client.Object) []string {
	ing, ok := o.(*networkingv1.Ingress)
	if !ok {
		return nil
	}
	var out []string
	add := func(b *networkingv1.IngressBackend) {
		if b != nil && b.Service != nil && b.Service.Name != "" {
			out = append(out, b.Service.Name)
		}
	}
	add(ing.Spec.DefaultBackend)
	for _, r := range ing.Spec.Rules {
		if r.HTTP == nil {
			continue
		}
		for i := range r.HTTP.Paths {
			add(&r.HTTP.Paths[i].Backend)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ServiceRefusal is why routers that proxy to ExternalName Services (externalName) or read
// annotations (their names under any prefix) from the Services routes send to must not serve a
// route that sends to svc; "" when they may.
func ServiceRefusal(svc *corev1.Service, externalName bool, annotations []string) string {
	if externalName && svc.Spec.Type == corev1.ServiceTypeExternalName {
		return "its Service " + svc.Name + " is ExternalName, which these routers would proxy to"
	}
	keys := make([]string, 0, len(svc.Annotations))
	for k := range svc.Annotations {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if slices.Contains(annotations, k[strings.LastIndex(k, "/")+1:]) {
			return "its Service " + svc.Name + " carries annotation " + k + ", which these routers read as configuration"
		}
	}
	return ""
}
