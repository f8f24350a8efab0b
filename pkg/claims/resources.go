package claims

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// routerResources are the resources a claim may set on its router container: what a router uses,
// and what the API server accepts without the extra rules of hugepages and extended resources.
var routerResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage}

// AdmittedResources is what the claim's router runs with: its resources, with every limit it does
// not set taken from the profile's maxResources (maxResources is a maximum, never "uncapped").
func AdmittedResources(r corev1.ResourceRequirements, maxResources corev1.ResourceList) corev1.ResourceRequirements {
	out := *r.DeepCopy()
	for name, q := range maxResources {
		if _, ok := out.Limits[name]; ok || !slices.Contains(routerResources, name) {
			continue
		}
		if out.Limits == nil {
			out.Limits = corev1.ResourceList{}
		}
		out.Limits[name] = q.DeepCopy()
	}
	return out
}

// invalidResources says what of r the API server would refuse in the router's Deployment, or a
// claim must not set ("" when nothing): resources.claims, a resource other than cpu, memory or
// ephemeral-storage, a negative quantity, a request above its (defaulted) limit.
func invalidResources(r corev1.ResourceRequirements, maxResources corev1.ResourceList) string {
	var p []string
	if len(r.Claims) > 0 {
		p = append(p, "resources.claims is not allowed")
	}
	for _, list := range []corev1.ResourceList{r.Requests, r.Limits} {
		for name, q := range list {
			if !slices.Contains(routerResources, name) {
				p = append(p, fmt.Sprintf("resource %s cannot be set (only cpu, memory and ephemeral-storage)", name))
			}
			if q.Sign() < 0 {
				p = append(p, fmt.Sprintf("%s %s is negative", name, q.String()))
			}
		}
	}
	limits := AdmittedResources(r, maxResources).Limits
	for name, q := range r.Requests {
		if limit, ok := limits[name]; ok && q.Cmp(limit) > 0 {
			p = append(p, fmt.Sprintf("%s request %s is above its limit %s", name, q.String(), limit.String()))
		}
	}
	slices.Sort(p)
	return strings.Join(slices.Compact(p), "; ")
}
