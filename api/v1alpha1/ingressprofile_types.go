package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IngressProfile is what a seed operator sets once: which user clusters get Shardgate's ingress,
// and how their DNS is published. When several profiles select a cluster, the oldest wins.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=igp
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Zone",type=string,JSONPath=`.spec.dns.zone`
// +kubebuilder:printcolumn:name="Clusters",type=integer,JSONPath=`.status.matchingClusters`
// +kubebuilder:printcolumn:name="Valid",type=string,JSONPath=`.status.conditions[?(@.type=="Valid")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type IngressProfile struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   IngressProfileSpec   `json:"spec,omitempty"`
	Status IngressProfileStatus `json:"status,omitempty"`
}

// IngressProfileSpec selects clusters and says how to publish their DNS.
//
// A shard's flavour changes in place between traefik and haproxy. In each cluster the change
// waits (FlavourChangesHeld) until no route on the shard would be dropped or served unsafely by
// the new routers (haproxy's select routes by the class annotation Shardgate writes, whatever class
// a route names, so a shard becoming haproxy keeps its Ingresses; traefik's serve only routes
// naming Traefik's class); then they roll from one flavour to the other like any rolling update.
// Setting a held change back changes nothing. No shards listed (absent or empty) is the implicit
// default shard, of traefik. The first shard's flavour is fixed: it is the claimed shards' and the
// clusters' default class's.
// +kubebuilder:validation:XValidation:rule="!(has(oldSelf.shards) && size(oldSelf.shards) > 0) || (has(self.shards) && size(self.shards) > 0) || !oldSelf.shards.exists(o, o.name == 'default' && o.flavour != 'traefik')",message="without shards the profile has the implicit default shard, which runs traefik routers; a shard's flavour cannot change in place: add a shard of the new flavour, move the routes to its class, then remove the old shard"
// +kubebuilder:validation:XValidation:rule="(has(oldSelf.shards) && size(oldSelf.shards) > 0) || !has(self.shards) || self.shards.all(s, s.name != 'default' || s.flavour == 'traefik')",message="the implicit default shard runs traefik routers; its flavour cannot change in place: add a shard of the new flavour, move the routes to its class, then remove the old shard"
// +kubebuilder:validation:XValidation:rule="(has(oldSelf.shards) && size(oldSelf.shards) > 0 ? oldSelf.shards[0].flavour : 'traefik') == (has(self.shards) && size(self.shards) > 0 ? self.shards[0].flavour : 'traefik')",message="the first shard's flavour is the claimed shards' and the default IngressClass's; it cannot change in place (by an edit, a reorder or removing the first shard): keep a first shard of that flavour"
type IngressProfileSpec struct {
	// clusterSelector selects user clusters by the labels of their Cluster (Cluster API) or
	// kubeconfig Secret. An empty selector selects every cluster.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist'])",message="matchExpressions[].operator must be In, NotIn, Exists or DoesNotExist"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, (e.operator in ['In', 'NotIn']) == (has(e.values) && size(e.values) > 0))",message="matchExpressions[]: In and NotIn need values, Exists and DoesNotExist take none"
	ClusterSelector metav1.LabelSelector `json:"clusterSelector,omitempty"`

	// dns says how each selected cluster's wildcard records are published.
	// +optional
	DNS DNSSettings `json:"dns,omitempty"`

	// allocation says how Ingresses are spread over the shards.
	// +optional
	Allocation AllocationSettings `json:"allocation,omitempty"`

	// ingressClass says whether the shardgate IngressClass becomes the clusters' default.
	// +optional
	IngressClass IngressClassSettings `json:"ingressClass,omitempty"`

	// shards deployed into every selected cluster. None listed means one shard named "default".
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:XValidation:rule="self.flavour == oldSelf.flavour || (oldSelf.flavour in ['traefik', 'haproxy'] && self.flavour in ['traefik', 'haproxy'])",message="a shard's flavour changes in place only between traefik and haproxy: add a shard of the new flavour, move the routes to its class, then remove the old shard"
	Shards []ShardSpec `json:"shards,omitempty"`

	// tls gives every selected cluster HTTPS through one cert-manager certificate per cluster.
	// +optional
	TLS TLSSettings `json:"tls,omitempty"`

	// claims says whether and what users of the clusters may claim as dedicated shards
	// (IngressClaim).
	// +optional
	Claims ClaimSettings `json:"claims,omitempty"`

	// canary: a canary route per shard that the controller requests periodically (on unless
	// disabled), reported as RoutesServing.
	// +optional
	Canary CanarySettings `json:"canary,omitempty"`

	// vip: the L2 domain, default VIP pool and VRRP router IDs of the selected clusters' VIP
	// shards.
	// +optional
	VIP ClusterVIPSettings `json:"vip,omitempty"`

	// gatewayAPI: Enabled installs Gateway API's standard CRDs (the release Shardgate pins) into
	// the selected clusters that have none, uses those someone else installed as they are, and
	// serves HTTPRoutes (every router gets its Gateway provider: one rollout); Disabled (default)
	// installs nothing and uses none (CRDs already there stay). A change re-engages the clusters.
	// +optional
	// +kubebuilder:default=Disabled
	GatewayAPI GatewayAPIMode `json:"gatewayAPI,omitempty"`
}

// EmptyTargetsPolicy says what happens to a cluster's records when it has no ready ingress node.
// +kubebuilder:validation:Enum=KeepLast;Remove
type EmptyTargetsPolicy string

const (
	// EmptyTargetsKeepLast keeps the last published targets (a blip must not take names down).
	EmptyTargetsKeepLast EmptyTargetsPolicy = "KeepLast"
	// EmptyTargetsRemove removes the records while no node is ready.
	EmptyTargetsRemove EmptyTargetsPolicy = "Remove"
)

// NodeAddressType is a Node address type usable as a DNS target.
// +kubebuilder:validation:Enum=ExternalIP;InternalIP
type NodeAddressType string

// Node address types.
const (
	ExternalIP NodeAddressType = "ExternalIP"
	InternalIP NodeAddressType = "InternalIP"
)

// IPFamily of published addresses.
// +kubebuilder:validation:Enum=IPv4;IPv6
type IPFamily string

// IP families.
const (
	IPv4 IPFamily = "IPv4"
	IPv6 IPFamily = "IPv6"
)

// DNSSettings configure a cluster's records `*.<clusterid>.<zone>` and `<clusterid>.<zone>`.
type DNSSettings struct {
	// zone is the parent DNS zone. Empty means the controller's --dns-zone.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?\.)*[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?\.?$`
	Zone string `json:"zone,omitempty"`

	// ttl of the records in seconds.
	// +optional
	// +kubebuilder:default=60
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	TTL int64 `json:"ttl,omitempty"`

	// addressTypes in order of preference: a node's first type that has an address is published.
	// +optional
	// +kubebuilder:default={"ExternalIP","InternalIP"}
	// +kubebuilder:validation:MaxItems=2
	// +listType=set
	AddressTypes []NodeAddressType `json:"addressTypes,omitempty"`

	// ipFamilies published: IPv4 gives A records, IPv6 AAAA records.
	// +optional
	// +kubebuilder:default={"IPv4","IPv6"}
	// +kubebuilder:validation:MaxItems=2
	// +listType=set
	IPFamilies []IPFamily `json:"ipFamilies,omitempty"`

	// emptyTargets: what to publish while the cluster has no ready ingress node.
	// +optional
	// +kubebuilder:default=KeepLast
	EmptyTargets EmptyTargetsPolicy `json:"emptyTargets,omitempty"`

	// ingressNodeSelector picks the nodes that carry ingress traffic; empty means all nodes.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist'])",message="matchExpressions[].operator must be In, NotIn, Exists or DoesNotExist"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, (e.operator in ['In', 'NotIn']) == (has(e.values) && size(e.values) > 0))",message="matchExpressions[]: In and NotIn need values, Exists and DoesNotExist take none"
	IngressNodeSelector *metav1.LabelSelector `json:"ingressNodeSelector,omitempty"`
}

// AllocationStrategy picks a shard for an Ingress whose hosts do not fix one.
// +kubebuilder:validation:Enum=RoundRobin;LeastRoutes;LeastLoaded;LeastUtilized
type AllocationStrategy string

// Allocation strategies.
const (
	StrategyRoundRobin  AllocationStrategy = "RoundRobin"
	StrategyLeastRoutes AllocationStrategy = "LeastRoutes"
	StrategyLeastLoaded AllocationStrategy = "LeastLoaded"
	// StrategyLeastUtilized picks the shard whose routers report the most headroom (ShardLoadSpec),
	// and LeastLoaded while a candidate's load is unknown.
	StrategyLeastUtilized AllocationStrategy = "LeastUtilized"
)

// NamespaceOwnership says whether several namespaces may serve one host.
// +kubebuilder:validation:Enum=Strict;InterNamespaceAllowed
type NamespaceOwnership string

// Namespace ownership policies.
const (
	// OwnershipStrict: the first namespace to claim a host owns it.
	OwnershipStrict NamespaceOwnership = "Strict"
	// OwnershipInterNamespaceAllowed: any namespace may serve any host (paths split it).
	OwnershipInterNamespaceAllowed NamespaceOwnership = "InterNamespaceAllowed"
)

// WildcardPolicy says whether route hosts may be wildcards (*.example.org).
// +kubebuilder:validation:Enum=Allow;Deny
type WildcardPolicy string

// Wildcard policies.
const (
	WildcardsAllowed WildcardPolicy = "Allow"
	WildcardsDenied  WildcardPolicy = "Deny"
)

// AllocationSettings configure route allocation.
type AllocationSettings struct {
	// strategy for Ingresses whose hosts do not fix the shard: RoundRobin, LeastRoutes (fewest
	// bound Ingresses), LeastLoaded (fewest Ingresses per ready router), LeastUtilized (the most
	// headroom by the load the shards' routers report).
	// +optional
	// +kubebuilder:default=LeastRoutes
	Strategy AllocationStrategy `json:"strategy,omitempty"`
	// namespaceOwnership: Strict (the first namespace to claim a host owns it) or
	// InterNamespaceAllowed.
	// +optional
	// +kubebuilder:default=Strict
	NamespaceOwnership NamespaceOwnership `json:"namespaceOwnership,omitempty"`
	// wildcardPolicy: Deny (default) refuses hosts like *.example.org; Allow accepts them.
	// Even when allowed, no route may take a whole shard domain (*.<shard domain>).
	// +optional
	// +kubebuilder:default=Deny
	WildcardPolicy WildcardPolicy `json:"wildcardPolicy,omitempty"`
	// score: a CEL expression of shard and route that scores each candidate shard for a new route;
	// the lowest score wins (ties: fewest routes per ready router, then name), and strategy decides
	// when the expression fails. See docs/operator-guide.md for the variables.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Score string `json:"score,omitempty"`
	// extender is an HTTP service that picks the shard of each new route; strategy (or score)
	// decides when it does not answer in time or names no candidate.
	// +optional
	Extender *AllocationExtender `json:"extender,omitempty"`
}

// AllocationExtender is an allocation extender (the kube-scheduler extender convention): for each
// new route Shardgate POSTs the route and its candidate shards as JSON and uses the answer's shard.
type AllocationExtender struct {
	// url of the extender: https, answering POST.
	// +kubebuilder:validation:Pattern=`^https://`
	// +kubebuilder:validation:MaxLength=2048
	URL string `json:"url"`
	// caBundle: PEM certificates the extender's serving certificate must chain to.
	// +kubebuilder:validation:MinLength=1
	CABundle string `json:"caBundle"`
	// timeout of one request; default 2s, at most 10s.
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// DefaultClassPolicy says whether the shardgate IngressClass becomes the user cluster's
// default class (the class of Ingresses that name none).
// +kubebuilder:validation:Enum=IfNoDefault;Never
type DefaultClassPolicy string

// Default class policies.
const (
	// DefaultClassIfNoDefault: Shardgate marks its class default once, when the cluster has no
	// default class; another controller's default is never taken, and an administrator who
	// changes the mark afterwards is never overruled.
	DefaultClassIfNoDefault DefaultClassPolicy = "IfNoDefault"
	// DefaultClassNever: the shardgate class is never the default; only Ingresses that name it
	// (or carry the legacy kubernetes.io/ingress.class: shardgate annotation) are Shardgate's.
	DefaultClassNever DefaultClassPolicy = "Never"
)

// IngressClassSettings configure the shardgate IngressClass in user clusters.
type IngressClassSettings struct {
	// default: IfNoDefault (default) or Never.
	// +optional
	// +kubebuilder:default=IfNoDefault
	Default DefaultClassPolicy `json:"default,omitempty"`
}

// IngressProfileStatus is what the controller observed.
type IngressProfileStatus struct {
	// matchingClusters is how many clusters this profile is in force for.
	// +optional
	MatchingClusters int32 `json:"matchingClusters"`
	// observedGeneration is the generation last validated.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions: Valid.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// IngressProfileList is a list of IngressProfiles.
// +kubebuilder:object:root=true
type IngressProfileList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []IngressProfile `json:"items"`
}

func init() {
	register(&IngressProfile{}, &IngressProfileList{})
}
