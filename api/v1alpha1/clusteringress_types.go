package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterIngress is Shardgate's view of one user cluster: created for every cluster an
// IngressProfile selects (same namespace and name as the Cluster or kubeconfig Secret, owned by
// it), carrying the resolved settings and the status dashboards read.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=ci
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Cluster ID",type=string,JSONPath=`.status.clusterID`
// +kubebuilder:printcolumn:name="Domain",type=string,JSONPath=`.status.domain`
// +kubebuilder:printcolumn:name="Ready Nodes",type=integer,JSONPath=`.status.readyNodeCount`
// +kubebuilder:printcolumn:name="Targets",type=string,JSONPath=`.status.targetsSummary`
// +kubebuilder:printcolumn:name="Routes",type=integer,JSONPath=`.status.routes`
// +kubebuilder:printcolumn:name="Reachable",type=string,JSONPath=`.status.conditions[?(@.type=="ClusterReachable")].status`
// +kubebuilder:printcolumn:name="DNS",type=string,JSONPath=`.status.conditions[?(@.type=="DNSPublished")].reason`
// +kubebuilder:printcolumn:name="TLS",type=string,JSONPath=`.status.conditions[?(@.type=="CertificateReady")].reason`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterIngress struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterIngressSpec   `json:"spec,omitempty"`
	Status ClusterIngressStatus `json:"status,omitempty"`
}

// ClusterReference names the seed object a user cluster comes from.
type ClusterReference struct {
	// kind is Cluster (Cluster API), KubermaticCluster (Kubermatic; cluster-scoped, its
	// namespace is the ClusterIngress') or Secret (kubeconfig Secret).
	// +kubebuilder:validation:Enum=Cluster;Secret;KubermaticCluster
	Kind string `json:"kind"`
	// name of the object (in the ClusterIngress' namespace, for namespaced kinds).
	Name string `json:"name"`
}

// ClusterIngressSpec is set by Shardgate from the cluster source and the selecting profile.
type ClusterIngressSpec struct {
	// clusterRef is the source object.
	ClusterRef ClusterReference `json:"clusterRef"`
	// profile is the IngressProfile in force.
	Profile string `json:"profile"`
	// clusterID as requested by the source (name or shardgate.io/cluster-id annotation). It is
	// validated by the identity controller; the accepted ID is status.clusterID.
	ClusterID string `json:"clusterID"`
	// dns are the profile's resolved DNS settings (zone defaulted to the controller's).
	DNS DNSSettings `json:"dns"`
	// allocation is the profile's allocation policy.
	// +optional
	Allocation AllocationSettings `json:"allocation,omitempty"`
	// ingressClass is the profile's IngressClass policy.
	// +optional
	IngressClass IngressClassSettings `json:"ingressClass,omitempty"`
	// shards are the profile's shards with defaults applied.
	// +optional
	// +listType=map
	// +listMapKey=name
	Shards []ShardSpec `json:"shards,omitempty"`
	// tls are the profile's TLS settings.
	// +optional
	TLS TLSSettings `json:"tls,omitempty"`
	// vip: the profile's L2 domain, VIP pool and router IDs.
	// +optional
	VIP ClusterVIPSettings `json:"vip,omitempty"`
	// claims are the profile's claim settings with defaults applied.
	// +optional
	Claims ClaimSettings `json:"claims,omitempty"`
	// canary is the profile's canary setting.
	// +optional
	Canary CanarySettings `json:"canary,omitempty"`
	// gatewayAPI is the profile's Gateway API setting (Disabled when unset).
	// +optional
	// +kubebuilder:default=Disabled
	GatewayAPI GatewayAPIMode `json:"gatewayAPI,omitempty"`
}

// ClusterIngressStatus is observed state.
type ClusterIngressStatus struct {
	// clusterID accepted for this cluster.
	// +optional
	ClusterID string `json:"clusterID,omitempty"`
	// domain is <clusterID>.<zone>, held by this cluster (DomainAssigned); every host under it
	// resolves to the cluster's ingress nodes once DNSPublished says so.
	// +optional
	Domain string `json:"domain,omitempty"`
	// readyNodes are the ingress nodes currently eligible (names, sorted).
	// +optional
	ReadyNodes []string `json:"readyNodes,omitempty"`
	// readyNodeCount is len(readyNodes), for printer columns.
	// +optional
	ReadyNodeCount int32 `json:"readyNodeCount"`
	// targets are the addresses in the DNSEndpoint (which may be the last known ones).
	// +optional
	Targets []string `json:"targets,omitempty"`
	// targetsSummary is targets joined by commas, for printer columns.
	// +optional
	TargetsSummary string `json:"targetsSummary,omitempty"`
	// shards as observed in the user cluster.
	// +optional
	// +listType=map
	// +listMapKey=name
	Shards []ShardStatus `json:"shards,omitempty"`
	// routes is the number of routes (of every kind) allocated to a shard.
	// +optional
	Routes int32 `json:"routes"`
	// rejectedRoutes is the number of routes Shardgate refused (each says why).
	// +optional
	RejectedRoutes int32 `json:"rejectedRoutes"`
	// routeKinds count the routes per kind (Ingress, HTTPRoute) the cluster serves.
	// +optional
	// +listType=map
	// +listMapKey=kind
	// +kubebuilder:validation:MaxItems=8
	RouteKinds []RouteKindCount `json:"routeKinds,omitempty"`
	// plannedKinds are the route kinds allocation has planned in the cluster, kept while one is
	// not served for a while: the first pass that plans a kind not among them trusts none of its
	// routes' marks (written before Shardgate guarded the kind there).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=63
	PlannedKinds []string `json:"plannedKinds,omitempty"`
	// dnsEndpointRef names the DNSEndpoint (externaldns.k8s.io/v1alpha1) in this namespace.
	// +optional
	DNSEndpointRef string `json:"dnsEndpointRef,omitempty"`
	// lastPublishedTime is when the DNSEndpoint was last written.
	// +optional
	LastPublishedTime *metav1.Time `json:"lastPublishedTime,omitempty"`
	// dnsVerifiedBy are the authoritative servers that answered exactly the published targets at
	// the last check; empty while they do not, or when the controller does not verify DNS.
	// +optional
	DNSVerifiedBy []string `json:"dnsVerifiedBy,omitempty"`
	// certificate is the cluster's certificate (when the profile's TLS is on).
	// +optional
	Certificate *CertificateStatus `json:"certificate,omitempty"`
	// vips allocated to the cluster's VIP shards, and who holds them.
	// +optional
	// +listType=map
	// +listMapKey=shard
	VIPs []ShardVIPs `json:"vips,omitempty"`
	// routedIPs of the cluster (its RoutedIP shards' and its owners' RoutedIPs): the seed's
	// record of which node holds each, written by the routedips controller.
	// +optional
	// +listType=map
	// +listMapKey=address
	RoutedIPs []RoutedIPRecord `json:"routedIPs,omitempty"`
	// claims: the cluster's IngressClaims, each with the shard provisioned for it (the claims
	// controller's record; every controller adds the claimed shards to the profile's).
	// +optional
	// +listType=map
	// +listMapKey=namespace
	// +listMapKey=name
	Claims []ClaimRecord `json:"claims,omitempty"`
	// canaries: each shard's canary verdict (the canary controller's record).
	// +optional
	// +listType=map
	// +listMapKey=shard
	Canaries []CanaryStatus `json:"canaries,omitempty"`
	// shardLoad: each load-reporting shard's load (the load controller's record).
	// +optional
	// +listType=map
	// +listMapKey=shard
	ShardLoad []ShardLoadStatus `json:"shardLoad,omitempty"`
	// shardFlavours: the flavour each of spec.shards' routers run, as the allocation controller
	// admitted it (a flavour change waits here until it is safe; FlavourChangesHeld says why).
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	ShardFlavours []ShardFlavour `json:"shardFlavours,omitempty"`
	// observedGeneration is the generation last reconciled successfully.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions: SourceAvailable, ClusterReachable, ShardsAvailable, RoutesProtected,
	// GatewayAPIAvailable, DNSPublished, CertificateReady (when TLS is on), VIPsAvailable (with VIP shards),
	// RoutedIPsAssigned (with routed IPs), RoutesServing (with the canary), FlavourChangesHeld (while
	// a shard's flavour changes), Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// RouteKindCount is how many routes of one kind are allocated and rejected.
type RouteKindCount struct {
	// kind of route (Ingress, HTTPRoute).
	Kind string `json:"kind"`
	// routes allocated to a shard.
	Routes int32 `json:"routes"`
	// rejected routes (each says why).
	Rejected int32 `json:"rejected"`
}

// ClusterIngressList is a list of ClusterIngresses.
// +kubebuilder:object:root=true
type ClusterIngressList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterIngress `json:"items"`
}

func init() {
	register(&ClusterIngress{}, &ClusterIngressList{})
}
