package gatewayapi

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"
)

// Group is Gateway API's API group.
const Group = gatewayv1.GroupName

// Annotations every CRD of a Gateway API release carries.
const (
	BundleVersionAnnotation = "gateway.networking.k8s.io/bundle-version"
	ChannelAnnotation       = "gateway.networking.k8s.io/channel"
)

// Kind is one kind of the set Shardgate installs: its CRD and the version Shardgate and its
// routers use it at.
type Kind struct {
	Kind, CRD, Version string
}

// Kinds are the kinds Shardgate installs where a cluster has none of Gateway API, each at the version
// Shardgate and its routers use. Beside the three every Gateway API route needs (GatewayClass,
// Gateway, HTTPRoute) and ListenerSet, they are what Traefik's kubernetesGateway provider (v3.7.12,
// the version hack/tools pins: pkg/provider/kubernetes/gateway/client.go, WatchAll) starts an
// informer for and waits to sync before it serves anything: GRPCRoute, ReferenceGrant (at v1beta1), BackendTLSPolicy and TLSRoute
// (both v1). Left out of the release's standard channel, on purpose:
//   - TCPRoute and UDPRoute: Traefik watches TCPRoutes only with its experimental channel on (and
//     then at v1alpha2, which this release's standard CRD does not serve) and UDPRoutes never; a CRD
//     no router serves would only invite routes that go nowhere.
//   - The safe-upgrades ValidatingAdmissionPolicy (gateway.networking.k8s.io_vap_safeupgrades.yaml):
//     it judges every create and update of every CRD of the group, whoever writes it, so it decides
//     how the cluster owner may later upgrade or change channel. That is the owner's choice to make,
//     not a side effect of Shardgate engaging the cluster.
var Kinds = []Kind{
	{"GatewayClass", "gatewayclasses." + Group, "v1"},
	{"Gateway", "gateways." + Group, "v1"},
	{"HTTPRoute", "httproutes." + Group, "v1"},
	{"ListenerSet", "listenersets." + Group, "v1"},
	{"GRPCRoute", "grpcroutes." + Group, "v1"},
	{"ReferenceGrant", "referencegrants." + Group, "v1beta1"},
	{"BackendTLSPolicy", "backendtlspolicies." + Group, "v1"},
	{"TLSRoute", "tlsroutes." + Group, "v1"},
}

// routeKinds are the kinds without which Shardgate serves no Gateway API route (Served).
var routeKinds = []string{"GatewayClass", "Gateway", "HTTPRoute"}

// RoutesNeed reports whether kind is one without which Shardgate serves no Gateway API route.
func RoutesNeed(kind string) bool { return slices.Contains(routeKinds, kind) }

// Versions are the versions of the group at which Kinds are used: what discovery is asked.
func Versions() []string {
	var out []string
	for _, k := range Kinds {
		if !slices.Contains(out, k.Version) {
			out = append(out, k.Version)
		}
	}
	return out
}

// CRDNames are the names of the CRDs Shardgate installs (of Kinds), in order.
func CRDNames() []string {
	out := make([]string, len(Kinds))
	for i, k := range Kinds {
		out[i] = k.CRD
	}
	return out
}

// CRDs are the release's CRDs of Kinds, parsed from the embedded files unchanged, by name; every
// call returns new copies.
func CRDs() (map[string]*unstructured.Unstructured, error) {
	parsed, err := embedded()
	if err != nil {
		return nil, err
	}
	out := map[string]*unstructured.Unstructured{}
	for _, k := range Kinds {
		u, ok := parsed[k.CRD]
		if !ok {
			return nil, fmt.Errorf("the release's CRDs hold no %s", k.CRD)
		}
		out[k.CRD] = u.DeepCopy()
	}
	return out, nil
}

// embedded parses every embedded CRD once (the policy file, not a CRD, is skipped).
var embedded = sync.OnceValues(func() (map[string]*unstructured.Unstructured, error) {
	files, err := CRDFiles.ReadDir("crds")
	if err != nil {
		return nil, err
	}
	out := map[string]*unstructured.Unstructured{}
	for _, f := range files {
		b, err := CRDFiles.ReadFile("crds/" + f.Name())
		if err != nil {
			return nil, err
		}
		if strings.Contains(string(b), "\n---") {
			continue // the safe-upgrades policy and its binding: never installed (see Kinds)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(b, &u.Object); err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name(), err)
		}
		if u.GetKind() != "CustomResourceDefinition" {
			continue
		}
		out[u.GetName()] = u
	}
	return out, nil
})
