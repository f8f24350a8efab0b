// Package names holds the names Shardgate gives things in user clusters and DNS, shared by every
// controller: the namespace, Traefik's IngressClass, router objects, shard domains and default hosts.
package names

import (
	"crypto/sha256"
	"encoding/base32"
	"strings"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// Names of what Shardgate owns in a user cluster.
const (
	// Namespace holds the routers.
	Namespace = "shardgate-system"
	// IngressClassName is the Traefik flavour's class, the one users' Ingresses have named since
	// the first release. Each flavour has its own class: code asks a shard's flavour for it
	// (render.Flavour.IngressClass); this name stays so that it never changes for Traefik.
	IngressClassName = "shardgate"
	// UserInfoNamespace/UserInfoName: the ConfigMap that tells users where routes land.
	UserInfoNamespace = "kube-public"
	UserInfoName      = "shardgate-ingress"
	// TLSSecretName is the routers' copy of the cluster's certificate (in Namespace): the only
	// Secret Shardgate reads or writes in a user cluster.
	TLSSecretName = "shardgate-tls"
)

// RouterName is the name of a shard's Deployment, Service, ServiceAccount and PDB.
func RouterName(shard string) string { return "router-" + shard }

// ShardDomain is the domain a shard owns: the cluster domain for "default", <shard>.<domain>
// otherwise.
func ShardDomain(shard, clusterDomain string) string {
	if shard == v1alpha1.DefaultShardName {
		return clusterDomain
	}
	return shard + "." + clusterDomain
}

// defaultHostHashLength is how many base32 characters of the (namespace, name) hash a default
// host label carries: 40 bits.
const defaultHostHashLength = 8

var hostHash = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// DefaultHostLabel is the first label of the default host of Ingress name in namespace:
// <name>-<namespace>-<hash>, where hash is 8 base32 characters of SHA-256(namespace/name).
//
// <name>-<namespace> alone is ambiguous (a-b in c and a in b-c both give a-b-c): the hash tells
// the pairs apart, so default hosts never collide, and since the label can be recognised
// (IsDefaultHostLabelOf), no one can claim another Ingress' default host before it exists. Dots in
// an Ingress name become dashes. ok is false when the label would exceed 63 characters.
func DefaultHostLabel(namespace, name string) (string, bool) {
	l := strings.ReplaceAll(name, ".", "-") + "-" + namespace + "-" + pairHash(namespace, name)
	return l, len(l) <= 63
}

func pairHash(namespace, name string) string {
	sum := sha256.Sum256([]byte(namespace + "/" + name))
	return hostHash.EncodeToString(sum[:])[:defaultHostHashLength]
}

// DefaultHostOwner reports whether label is the default host label of some Ingress, existing or
// not, and of which: it tries every split of the label's readable part into name and namespace
// and checks the hash. An Ingress name with dots (rare) is not recognised here, because its dots
// are dashes in the label; the allocation planner also compares claims with the default labels
// of every existing Ingress, which covers those.
func DefaultHostOwner(label string) (namespace, name string, ok bool) {
	i := len(label) - defaultHostHashLength - 1
	if i <= 2 || label[i] != '-' {
		return "", "", false
	}
	readable, hash := label[:i], label[i+1:]
	for j := 1; j < len(readable)-1; j++ {
		if readable[j] != '-' {
			continue
		}
		n, ns := readable[:j], readable[j+1:]
		if pairHash(ns, n) == hash {
			return ns, n, true
		}
	}
	return "", "", false
}

// IsDefaultHostLabelOf reports whether label is the default host label of Ingress name in
// namespace.
func IsDefaultHostLabelOf(label, namespace, name string) bool {
	l, ok := DefaultHostLabel(namespace, name)
	return ok && l == label
}

// RouterSelector selects a shard's router pods (Deployment, Service, PDB, anti-affinity).
func RouterSelector(shard string) map[string]string {
	return map[string]string{v1alpha1.ShardLabel: shard, v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue}
}

// RouterLoadLeaseName is the Lease in which a router pod's load reporter reports its load. Pod
// names are DNS subdomains of at most 253 characters (a Deployment's are far shorter); a longer
// name ends in a hash of the pod's name.
func RouterLoadLeaseName(shard, pod string) string {
	return leaseName(RouterLoadLeasePrefix+shard+"-pod-", pod)
}

// RouterLoadLeasePrefix starts every router load Lease's name (and no VIP report's).
const RouterLoadLeasePrefix = "load-"

// VIPNodeLeaseName is the Lease in which a VIP shard's agent on node reports the configuration
// keepalived runs there and the VIPs the node holds. Node names are DNS subdomains, so the name
// is one too while it fits 253 characters; a longer one ends in a hash of the node's name.
func VIPNodeLeaseName(shard, node string) string { return leaseName("vip-"+shard+"-node-", node) }

// leaseName is prefix+name, hashed at the end where it would pass 253 characters.
func leaseName(prefix, name string) string {
	full := prefix + name
	if len(full) <= 253 {
		return full
	}
	sum := sha256.Sum256([]byte(name))
	h := hostHash.EncodeToString(sum[:])[:16]
	return strings.TrimRight(full[:253-17], ".-") + "-" + h
}

// RoutedIPName is the RoutedIP Shardgate creates in Namespace for one address of a RoutedIP shard.
func RoutedIPName(shard, address string) string {
	return "router-" + shard + "-" + strings.NewReplacer(".", "-", ":", "-").Replace(address)
}

// CanaryLabel is the first label of a shard's canary host, reserved: no Ingress may take it.
const CanaryLabel = "shardgate-canary"

// CanaryHost is the name the seed requests through a shard's routers: shardgate-canary.<domain>.
func CanaryHost(shardDomain string) string { return CanaryLabel + "." + shardDomain }

// CanaryGatewayLabel is the first label of a Gateway-served shard's second canary host, which
// only the canary's HTTPRoute routes (through the shard's Gateway), reserved like CanaryLabel.
const CanaryGatewayLabel = "shardgate-canary-gateway"

// CanaryGatewayHost is the name the seed requests through a Gateway-served shard's Gateway:
// shardgate-canary-gateway.<domain>.
func CanaryGatewayHost(shardDomain string) string { return CanaryGatewayLabel + "." + shardDomain }

// CanaryName names a shard's canary Ingress and Service (in Namespace).
func CanaryName(shard string) string { return "canary-" + shard }

// Gateway API objects Shardgate renders in a user cluster (when it serves Gateway API).
const (
	// ParentGatewayName is the Gateway in Namespace that tenants attach their routes to: one name
	// per cluster, so a tenant never needs to know shards. Allocation decides which shard's
	// Gateway (ShardGatewayName) serves a route attached to it.
	ParentGatewayName = "shardgate"
	// ParentGatewayClassName is the parent Gateway's class, whose controller is Shardgate's
	// allocator: no router serves it.
	ParentGatewayClassName = "shardgate"
)

// ShardGatewayName is a shard's Gateway (in Namespace), served by that shard's routers only.
func ShardGatewayName(shard string) string { return RouterName(shard) }

// ShardGatewayClassName is a shard's GatewayClass: one per shard, since a router serves the
// Gateways of the classes it is told (by label) to serve.
func ShardGatewayClassName(shard string) string { return "shardgate-" + shard }

// ShardRouteClass is the class a shard's routers select routes by when their flavour takes no
// label selector (v1alpha1.ShardClassAnnotation): unique per shard in a cluster, and in a prefix
// only Shardgate may write.
func ShardRouteClass(shard string) string { return v1alpha1.ShardClassPrefix + shard }
