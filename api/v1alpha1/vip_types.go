package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Source annotations that earlier versions read for VIP shards (on a Cluster, Kubermatic Cluster
// or kubeconfig Secret). They are no longer read: whoever writes a source could name a pool or
// domain of their own and be given another cluster's VIP and router ID. Pools, domains and router
// IDs are the operator's (IngressProfile spec.vip); a source still carrying one is told so in its
// SourceAvailable condition.
const (
	VIPPoolAnnotation  = "shardgate.io/vip-pool"
	L2DomainAnnotation = "shardgate.io/l2-domain"
)

// VRRPMode is how keepalived instances find each other.
// +kubebuilder:validation:Enum=Unicast;Multicast
type VRRPMode string

// VRRP modes.
const (
	// VRRPUnicast: adverts go to the other nodes running the shard's routers (Shardgate renders
	// the peers as router pods move). Works where multicast does not.
	VRRPUnicast VRRPMode = "Unicast"
	// VRRPMulticast: adverts go to 224.0.0.18.
	VRRPMulticast VRRPMode = "Multicast"
)

// VIPSettings of a shard with publishing VIP: its routers run on the host network of nodes in
// one L2 domain, keepalived beside them holds virtual IPs from a pool, and DNS answers the VIPs.
type VIPSettings struct {
	// pool the shard's VIPs come from: CIDRs or ranges ("192.0.2.16/28",
	// "192.0.2.40-192.0.2.49"). Empty: the profile's spec.vip.pool.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=100
	Pool []string `json:"pool,omitempty"`
	// count of VIPs. More than one: each is mastered on a different node where possible and DNS
	// answers all of them (active/active).
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16
	Count int32 `json:"count,omitempty"`
	// vrrp: Unicast (default) or Multicast.
	// +optional
	// +kubebuilder:default=Unicast
	VRRP VRRPMode `json:"vrrp,omitempty"`
	// advertInterval between VRRP adverts (10ms to 25s); a backup takes over after about three
	// missed ones. Default 200ms.
	// +optional
	AdvertInterval *metav1.Duration `json:"advertInterval,omitempty"`
	// image of the keepalived container (keepalived and shardgate-vip-agent).
	// +optional
	Image string `json:"image,omitempty"`
}

// ClusterVIPSettings are the VIP settings of every cluster a profile selects, the operator's
// alone: set in the IngressProfile and copied to each ClusterIngress.
type ClusterVIPSettings struct {
	// pool of VIP shards without a pool of their own: CIDRs or ranges.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=100
	Pool []string `json:"pool,omitempty"`
	// l2Domain the clusters' nodes are in. VIPs and VRRP router IDs are unique within a domain;
	// clusters in different domains may reuse them. Empty: the seed's one shared domain.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$`
	L2Domain string `json:"l2Domain,omitempty"`
	// routerIDs the clusters' VIPs may take as VRRP virtual router IDs (still unique in the
	// domain). Unset: 1-255. Narrow it to keep clear of other VRRP users of the segment.
	// +optional
	RouterIDs *RouterIDRange `json:"routerIDs,omitempty"`
}

// RouterIDRange is a range of VRRP virtual router IDs, first to last inclusive.
// +kubebuilder:validation:XValidation:rule="self.first <= self.last",message="first must not be above last"
type RouterIDRange struct {
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=255
	First int32 `json:"first"`
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=255
	Last int32 `json:"last"`
}

// VIPAddress is one VIP of a shard.
type VIPAddress struct {
	// address of the VIP.
	Address string `json:"address"`
	// routerID is its VRRP virtual router ID (1-255, unique in the L2 domain).
	RouterID int32 `json:"routerID"`
	// home is the node whose keepalived bids highest for the VIP: sticky while that node runs a
	// router of the shard, chosen to spread the VIPs. After a failover the VIP returns there.
	// +optional
	Home string `json:"home,omitempty"`
	// holder is the node observed holding the VIP (its keepalived reports it through a Lease
	// in shardgate-system); empty while none is observed.
	// +optional
	Holder string `json:"holder,omitempty"`
}

// ShardVIPs are the VIPs allocated to one shard.
type ShardVIPs struct {
	Shard string `json:"shard"`
	// pool the VIPs came from, as given.
	Pool string `json:"pool,omitempty"`
	// +optional
	Addresses []VIPAddress `json:"addresses,omitempty"`
}
