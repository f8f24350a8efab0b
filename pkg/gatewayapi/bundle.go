// Package gatewayapi is Gateway API in user clusters: the release Shardgate pins (its Go types in
// go.mod, its standard-channel CRDs in crds/, copied unchanged from that module's
// config/crd/standard), which Shardgate installs where a cluster has none.
package gatewayapi

import (
	"embed"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
)

// BundleVersion is the pinned release: the gateway.networking.k8s.io/bundle-version of every CRD
// in crds/ and the version of sigs.k8s.io/gateway-api in go.mod (TestBundleMatchesGoMod).
const BundleVersion = "v1.6.3"

// CRDFiles are the release's standard-channel CRDs and its safe-upgrades admission policy.
//
//go:embed crds/*.yaml
var CRDFiles embed.FS

// GroupVersion is the standard channel's API version, the one Shardgate reads and writes.
var GroupVersion = schema.GroupVersion{Group: gatewayv1.GroupName, Version: "v1"}

// AddToScheme registers the standard API's Go types (GatewayClass, Gateway, HTTPRoute, GRPCRoute,
// ListenerSet, ReferenceGrant, BackendTLSPolicy), and ReferenceGrant at v1beta1, the version
// Shardgate writes it at (every release's CRD serves it; Kinds).
func AddToScheme(s *runtime.Scheme) error {
	if err := gatewayv1.Install(s); err != nil {
		return err
	}
	return gatewayv1beta1.Install(s)
}
