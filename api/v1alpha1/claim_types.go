package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Ingress claims: a user who wants routers of their own creates an IngressClaim in the user
// cluster naming their Ingresses, HTTPRoutes and GRPCRoutes; Shardgate provisions a dedicated shard for them
// (a shard like any other: renderer, HA rules, DNS under the cluster's domain, certificate names)
// and binds exactly those routes to it, the way a PersistentVolumeClaim is bound. What users may claim
// is the operator's choice in the IngressProfile (claims). The seed's record of every claim is
// the ClusterIngress' status.claims; the claim's own status mirrors it.

// ReclaimPolicy says what happens to a claimed shard once every route (Ingress, HTTPRoute or GRPCRoute) it
// names is gone.
// +kubebuilder:validation:Enum=Retain;Recycle;Delete
type ReclaimPolicy string

// Reclaim policies.
const (
	// ReclaimRetain keeps the routers and the claim (Released); nothing binds to it again until
	// the user edits the claim.
	ReclaimRetain ReclaimPolicy = "Retain"
	// ReclaimRecycle keeps the claim bound and its routers ready for the Ingresses it names.
	ReclaimRecycle ReclaimPolicy = "Recycle"
	// ReclaimDelete removes the routers, the DNS names and the claim.
	ReclaimDelete ReclaimPolicy = "Delete"
)

// IngressClaim asks for a dedicated ingress shard serving the named Ingresses of its namespace.
// Installed into user clusters by Shardgate.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Shard",type=string,JSONPath=`.status.shard`
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.status.flavour`
// +kubebuilder:printcolumn:name="Domain",type=string,JSONPath=`.status.domain`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Bound",type=integer,JSONPath=`.status.boundCount`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Bound")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type IngressClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   IngressClaimSpec   `json:"spec"`
	Status IngressClaimStatus `json:"status,omitempty"`
}

// IngressClaimSpec is the user's.
// +kubebuilder:validation:XValidation:rule="(has(self.ingresses) && size(self.ingresses) > 0) || (has(self.httpRoutes) && size(self.httpRoutes) > 0) || (has(self.grpcRoutes) && size(self.grpcRoutes) > 0)",message="a claim names at least one Ingress, HTTPRoute or GRPCRoute"
type IngressClaimSpec struct {
	// ingresses of the claim's namespace that the dedicated shard serves (and only they).
	// +optional
	// +kubebuilder:validation:MaxItems=64
	Ingresses []corev1.LocalObjectReference `json:"ingresses,omitempty"`
	// httpRoutes of the claim's namespace (attached to the cluster's parent Gateway) that the
	// dedicated shard serves, where the cluster serves Gateway API and the claim's flavour serves
	// HTTPRoutes.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	HTTPRoutes []corev1.LocalObjectReference `json:"httpRoutes,omitempty"`
	// grpcRoutes of the claim's namespace (attached to the cluster's parent Gateway) that the
	// dedicated shard serves, where the cluster serves GRPCRoutes and the claim's flavour serves
	// Gateway API routes.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	GRPCRoutes []corev1.LocalObjectReference `json:"grpcRoutes,omitempty"`
	// replicas of the dedicated router (at most the profile's maxReplicas).
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	Replicas int32 `json:"replicas,omitempty"`
	// resources of the router container (within the profile's maxResources).
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	// reclaimPolicy once every route it names is gone.
	// +optional
	// +kubebuilder:default=Retain
	ReclaimPolicy ReclaimPolicy `json:"reclaimPolicy,omitempty"`
	// flavour of the dedicated routers (their router type): one the profile's claims.flavours
	// allows; empty: the cluster's default flavour (its default IngressClass's). Fixed once the
	// claim is admitted. The Ingresses it names must name the flavour's IngressClass
	// (status.ingressClassName).
	// +optional
	Flavour Flavour `json:"flavour,omitempty"`
}

// ClaimPhase is where a claim stands.
// +kubebuilder:validation:Enum=Pending;Bound;Released;Failed
type ClaimPhase string

// Claim phases.
const (
	// ClaimPending: admitted, its routers are not ready yet.
	ClaimPending ClaimPhase = "Pending"
	// ClaimBound: its routers are ready and serve the Ingresses it names.
	ClaimBound ClaimPhase = "Bound"
	// ClaimReleased: every route it named is gone and its policy is Retain: the routers stay,
	// nothing binds until the claim is edited.
	ClaimReleased ClaimPhase = "Released"
	// ClaimFailed: refused (see the Bound condition); nothing is provisioned for it.
	ClaimFailed ClaimPhase = "Failed"
)

// IngressClaimStatus mirrors the seed's record.
type IngressClaimStatus struct {
	// +optional
	Phase ClaimPhase `json:"phase,omitempty"`
	// shard provisioned for the claim.
	// +optional
	Shard string `json:"shard,omitempty"`
	// domain of the shard: *.<domain> resolves to its routers; CNAME custom hosts to <domain>.
	// +optional
	Domain string `json:"domain,omitempty"`
	// readyReplicas of its routers.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// flavour of its routers (their router type).
	// +optional
	Flavour Flavour `json:"flavour,omitempty"`
	// ingressClassName the Ingresses it names must have (or none, where it is the cluster's default):
	// the class of its routers' flavour.
	// +optional
	IngressClassName string `json:"ingressClassName,omitempty"`
	// boundIngresses: the Ingresses it serves now.
	// +optional
	BoundIngresses []string `json:"boundIngresses,omitempty"`
	// boundHTTPRoutes: the HTTPRoutes it serves now.
	// +optional
	BoundHTTPRoutes []string `json:"boundHTTPRoutes,omitempty"`
	// boundGRPCRoutes: the GRPCRoutes it serves now.
	// +optional
	BoundGRPCRoutes []string `json:"boundGRPCRoutes,omitempty"`
	// boundCount is the number of routes it serves (every kind), for printer columns.
	// +optional
	BoundCount int32 `json:"boundCount,omitempty"`
	// conditions: Bound (reasons Bound, Provisioning, Released, ClaimsNotAllowed,
	// OverLimits, InvalidResources, FlavourNotAllowed, FlavourUnavailable, RoutesNotServed,
	// HostsHeld, ShardNameTaken, NamesTooLong, EditRefused).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// IngressClaimList is a list of IngressClaims.
// +kubebuilder:object:root=true
type IngressClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []IngressClaim `json:"items"`
}

// ClaimSettings (IngressProfile claims) is what users of the profile's clusters may claim.
type ClaimSettings struct {
	// allowed: users may create IngressClaims. Turning it off refuses new claims and keeps the
	// admitted ones running.
	// +optional
	Allowed bool `json:"allowed,omitempty"`
	// publishing of claimed shards (HostNetwork, NodePort or LoadBalancer; default NodePort, so
	// that claimed routers never compete for the nodes' ports).
	// +optional
	// +kubebuilder:default=NodePort
	// +kubebuilder:validation:Enum=HostNetwork;NodePort;LoadBalancer
	Publishing Publishing `json:"publishing,omitempty"`
	// nodeSelector of claimed routers.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// flavours users may ask for in a claim (spec.flavour) besides the cluster's default flavour
	// (the profile's first shard's), which every claim may have. Removing one refuses new claims
	// of it and keeps the admitted ones running (on the flavour's default image).
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	Flavours []ClaimFlavour `json:"flavours,omitempty"`
	// image and imagePullPolicy of claimed routers of the default flavour (empty: the flavour's
	// default image); claims of another flavour run the image its entry in flavours names.
	// +optional
	Image string `json:"image,omitempty"`
	// +optional
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	// maxReplicas per claim.
	// +optional
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=1
	MaxReplicas int32 `json:"maxReplicas,omitempty"`
	// maxResources: the most a claim's router container may request or limit, per resource;
	// also the limit of a claim that sets none (a claim may set only cpu, memory and
	// ephemeral-storage, and only those listed here when the list is not empty).
	// +optional
	MaxResources corev1.ResourceList `json:"maxResources,omitempty"`
	// maxPerNamespace: claims admitted per namespace (oldest first).
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	MaxPerNamespace int32 `json:"maxPerNamespace,omitempty"`
}

// ClaimFlavour is a flavour users may claim routers of, beside the cluster's default.
type ClaimFlavour struct {
	// name of the flavour.
	Name Flavour `json:"name"`
	// image of its claimed routers (empty: the flavour's default).
	// +optional
	Image string `json:"image,omitempty"`
}

// Allows reports whether a claim may ask for flavour f besides the default flavour, and the
// image its routers run ("": the flavour's default).
func (s ClaimSettings) Allows(f Flavour) (image string, ok bool) {
	for _, c := range s.Flavours {
		if c.Name == f {
			return c.Image, true
		}
	}
	return "", false
}

// ClaimRecord is the seed's record of one admitted or refused claim (ClusterIngress
// status.claims): the shard it is provisioned as, with the settings that were admitted.
type ClaimRecord struct {
	// namespace and name of the IngressClaim.
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// shard provisioned ("" when refused).
	// +optional
	Shard string `json:"shard,omitempty"`
	// replicas and resources admitted (an edit over the limits keeps these).
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	// flavour admitted, when the claim asked for one (empty: the cluster's default flavour).
	// +optional
	Flavour Flavour `json:"flavour,omitempty"`
	// image of its routers, of another flavour than the default: claims.flavours' entry, kept
	// when the entry goes (admitted claims keep running as they are).
	// +optional
	Image string `json:"image,omitempty"`
	// ingresses bound to the shard.
	// +optional
	Ingresses []string `json:"ingresses,omitempty"`
	// httpRoutes bound to the shard.
	// +optional
	HTTPRoutes []string `json:"httpRoutes,omitempty"`
	// grpcRoutes bound to the shard.
	// +optional
	GRPCRoutes []string `json:"grpcRoutes,omitempty"`
	// +optional
	Phase ClaimPhase `json:"phase,omitempty"`
	// +optional
	Reason string `json:"reason,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
	// releasedGeneration: the claim's generation when it was Released; an edit (a newer
	// generation) binds it again.
	// +optional
	ReleasedGeneration int64 `json:"releasedGeneration,omitempty"`
	// everBound: some Ingress it names existed once (reclaim applies only after that).
	// +optional
	EverBound bool `json:"everBound,omitempty"`
	// ingressesGoneSince: when every route it bound (of every kind) was first seen
	// gone; the reclaim policy applies only once they have stayed gone for the reclaim grace (an
	// Ingress replaced with `kubectl replace --force` comes back within it).
	// +optional
	IngressesGoneSince *metav1.Time `json:"ingressesGoneSince,omitempty"`
}

// Bound is how many routes the claim binds, of every kind.
func (c ClaimRecord) Bound() int { return len(c.Ingresses) + len(c.HTTPRoutes) + len(c.GRPCRoutes) }

// Claim reasons (the claim's Bound condition, status.claims[].reason).
const (
	ReasonClaimBound        = "Bound"
	ReasonClaimProvisioning = "Provisioning"
	ReasonClaimReleased     = "Released"
	ReasonClaimsNotAllowed  = "ClaimsNotAllowed"
	ReasonClaimOverLimits   = "OverLimits"
	ReasonClaimNamesTooLong = "NamesTooLong"
	ReasonClaimEditRefused  = "EditRefused"
	// ReasonClaimInvalidResources: resources the API server would refuse for the router
	// (requests above limits, negative quantities, resources.claims, names a router cannot set).
	ReasonClaimInvalidResources = "InvalidResources"
	// ReasonClaimFlavourNotAllowed: the claim asks for a flavour the profile's claims.flavours
	// does not allow.
	ReasonClaimFlavourNotAllowed = "FlavourNotAllowed"
	// ReasonClaimFlavourUnavailable: the cluster lacks what the flavour's routers need (the
	// admission policy that keeps tenants' annotations out of HAProxy's shared configuration).
	ReasonClaimFlavourUnavailable = "FlavourUnavailable"
	// ReasonClaimRoutesNotServed: the claim names Gateway API routes only (HTTPRoutes, GRPCRoutes),
	// none of which its routers would serve (no Gateway API in the cluster, a kind the cluster
	// does not serve, or a flavour whose routers serve none).
	ReasonClaimRoutesNotServed = "RoutesNotServed"
	// ReasonClaimHostsHeld: the claimed shard's domain would take hosts another namespace holds.
	ReasonClaimHostsHeld = "HostsHeld"
	// ReasonClaimShardNameTaken: a profile shard now has the claimed shard's name (the profile's
	// shard wins); the claim is provisioned again under another name.
	ReasonClaimShardNameTaken = "ShardNameTaken"
)

func init() {
	register(&IngressClaim{}, &IngressClaimList{})
}

// ResolveClaims fills in the claim settings' defaults.
func ResolveClaims(c ClaimSettings) ClaimSettings {
	c = *c.DeepCopy()
	if c.Publishing == "" {
		c.Publishing = PublishNodePort
	}
	if c.MaxReplicas < 1 {
		c.MaxReplicas = 2
	}
	if c.MaxPerNamespace < 1 {
		c.MaxPerNamespace = 1
	}
	return c
}

// ClaimedShard is the shard provisioned for an admitted claim: one replica set of the flavour
// admitted (else defaultFlavour, the profile's first shard's, whose class is the cluster's
// default: a claim's classless Ingresses name it) with the claim's admitted replicas and
// resources and the profile's claim settings, taking Ingresses from the claim's namespace only
// (and, in allocation, only those it names). The settings' image is the default flavour's;
// another flavour's is its claims.flavours entry's, or the one recorded once the entry is gone.
func ClaimedShard(c ClaimRecord, s ClaimSettings, defaultFlavour Flavour) ShardSpec {
	s = ResolveClaims(s)
	flavour, image := c.Flavour, s.Image
	if flavour == "" || flavour == defaultFlavour {
		flavour = defaultFlavour
	} else if entry, ok := s.Allows(flavour); ok {
		image = entry
	} else {
		image = c.Image // no longer allowed: as admitted
	}
	return ShardSpec{Name: c.Shard, Flavour: flavour, Image: image, ImagePullPolicy: s.ImagePullPolicy,
		Replicas: ptr.To(max(c.Replicas, 1)), Publishing: s.Publishing, NodeSelector: s.NodeSelector, Resources: *c.Resources.DeepCopy(),
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: c.Namespace}},
		Claim:             c.Namespace + "/" + c.Name}
}

// Shards are the shards in force for the cluster: the profile's, then one per admitted claim
// (status.claims, written by the claims controller); with LeastUtilized every one reports load,
// and a shard whose routers follow load has the replicas the load controller decided.
func (ci *ClusterIngress) Shards() []ShardSpec {
	out := ci.runningShards()
	reportLoad := ci.Spec.Allocation.Strategy == StrategyLeastUtilized
	if len(ci.Status.Claims) == 0 && !reportLoad && len(ci.Status.ShardLoad) == 0 {
		return out
	}
	flavour := ci.Spec.DefaultFlavour()
	out = append([]ShardSpec(nil), out...)
	for _, c := range ci.ActiveClaims() {
		out = append(out, ClaimedShard(c, ci.Spec.Claims, flavour))
	}
	for i := range out {
		if reportLoad && out[i].Load == nil {
			out[i].Load = &ShardLoadSpec{} // LeastUtilized allocates by every shard's load
		}
		out[i].Replicas = followedReplicas(out[i], ci.Status.ShardLoad)
	}
	return out
}

// DefaultFlavour is the flavour of the profile's first shard: its class is the cluster's default,
// and a claim that names no flavour has it.
func (s *ClusterIngressSpec) DefaultFlavour() Flavour {
	if f := s.ShardsOrDefault()[0].Flavour; f != "" {
		return f
	}
	return FlavourTraefik // a spec written before flavours were defaulted
}

// followedReplicas is a shard's replicas: while its routers follow load, the load controller's
// (status.shardLoad), kept between the shard's replicas and maxReplicas.
func followedReplicas(s ShardSpec, loads []ShardLoadStatus) *int32 {
	if s.Load == nil || s.Load.MaxReplicas == nil || s.Replicas == nil {
		return s.Replicas
	}
	for _, l := range loads {
		if l.Shard == s.Name && l.Replicas > 0 {
			r := min(max(l.Replicas, *s.Replicas), max(*s.Load.MaxReplicas, *s.Replicas))
			return &r
		}
	}
	return s.Replicas
}

// ActiveClaims are the claim records that hold a shard. A record whose shard a profile shard
// has since taken is left out: the profile's shard wins (until the claims controller provisions
// the claim again under another name), so a claim never makes the cluster's shard set invalid.
func (ci *ClusterIngress) ActiveClaims() []ClaimRecord {
	profile := map[string]bool{}
	for _, s := range ci.Spec.ShardsOrDefault() {
		profile[s.Name] = true
	}
	var out []ClaimRecord
	for _, c := range ci.Status.Claims {
		if c.Shard != "" && !profile[c.Shard] {
			out = append(out, c)
		}
	}
	return out
}
