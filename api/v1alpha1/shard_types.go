package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultShardName is the shard every profile has when it lists none. It owns the cluster domain
// <clusterid>.<zone>; any other shard s owns <s>.<clusterid>.<zone>.
const DefaultShardName = "default"

// Flavour of ingress controller a shard runs.
// +kubebuilder:validation:Enum=traefik;haproxy
// +kubebuilder:validation:MaxLength=32
type Flavour string

// Flavours.
const (
	FlavourTraefik Flavour = "traefik"
	// FlavourHAProxy runs HAProxy's Kubernetes ingress controller (haproxytech/kubernetes-ingress)
	// with HAProxy: Ingresses only (it serves no HTTPRoute).
	FlavourHAProxy Flavour = "haproxy"
)

// Publishing says how a shard's routers are reached and so which addresses DNS publishes.
// +kubebuilder:validation:Enum=HostNetwork;NodePort;LoadBalancer;VIP;RoutedIP
type Publishing string

// Publishing strategies.
const (
	// PublishHostNetwork: routers bind the node's ports; DNS points at the nodes running a ready
	// router pod.
	PublishHostNetwork Publishing = "HostNetwork"
	// PublishNodePort: a NodePort Service; DNS points at the ready schedulable nodes matching the
	// shard's nodeSelector.
	PublishNodePort Publishing = "NodePort"
	// PublishLoadBalancer: a LoadBalancer Service; DNS points at its load-balancer addresses.
	PublishLoadBalancer Publishing = "LoadBalancer"
	// PublishVIP: routers bind the node's ports as with HostNetwork, keepalived beside them holds
	// VIPs allocated from a pool; DNS points at the VIPs.
	PublishVIP Publishing = "VIP"
	// PublishRoutedIP: routers bind the node's ports as with HostNetwork, a cloud's routed
	// (floating) IPs are moved to healthy router nodes through a ClusterRoutedIPClass; DNS points
	// at the routed IPs.
	PublishRoutedIP Publishing = "RoutedIP"
)

// ShardSpec describes one ingress-controller shard deployed into every selected user cluster.
type ShardSpec struct {
	// name of the shard, one DNS label. "default" owns the cluster domain.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// flavour of ingress controller.
	// +optional
	// +kubebuilder:default=traefik
	Flavour Flavour `json:"flavour,omitempty"`
	// image of the router; empty means the flavour's default.
	// +optional
	Image string `json:"image,omitempty"`
	// imagePullPolicy of the router image: Always, IfNotPresent or Never; empty means
	// Kubernetes' default (IfNotPresent unless the tag is :latest).
	// +optional
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	// replicas of the router. With 2 or more, replicas spread one per node, behind a
	// PodDisruptionBudget.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	Replicas *int32 `json:"replicas,omitempty"`
	// publishing strategy.
	// +optional
	// +kubebuilder:default=HostNetwork
	Publishing Publishing `json:"publishing,omitempty"`
	// vip settings, for publishing VIP.
	// +optional
	VIP *VIPSettings `json:"vip,omitempty"`
	// routedIP settings, for publishing RoutedIP.
	// +optional
	RoutedIP *RoutedIPSettings `json:"routedIP,omitempty"`
	// nodeSelector for the router pods.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// tolerations of the router pods.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// namespaceSelector: only Ingresses in matching namespaces may land on this shard. (Its
	// operators are checked by the controller: CEL rules on selectors in a list of shards exceed
	// the API server's cost budget.)
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	// routeSelector: only Ingresses with matching labels may land on this shard.
	// +optional
	RouteSelector *metav1.LabelSelector `json:"routeSelector,omitempty"`
	// resources of the router container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	// labels of the shard, for allocation scores and extenders to choose by (for example
	// tier: gold); they label nothing in the user cluster.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// load: the routers report their load (ShardLoadSpec); set implicitly, with its defaults,
	// on every shard of a cluster whose allocation strategy is LeastUtilized.
	// +optional
	Load *ShardLoadSpec `json:"load,omitempty"`
	// Claim is the IngressClaim (namespace/name) a claimed shard serves; never part of a
	// profile (ClaimedShard sets it in memory).
	Claim string `json:"-"`
}

// ShardStatus is one shard as observed in the user cluster.
type ShardStatus struct {
	Name string `json:"name"`
	// flavour of router the shard runs (its router type).
	// +optional
	Flavour string `json:"flavour,omitempty"`
	// domain the shard owns; *.<domain> and <domain> point at its targets.
	Domain string `json:"domain,omitempty"`
	// readyReplicas of the router Deployment.
	ReadyReplicas int32 `json:"readyReplicas"`
	// readyNodes the shard's DNS targets come from (sorted names).
	// +optional
	ReadyNodes []string `json:"readyNodes,omitempty"`
	// targets published for the shard.
	// +optional
	Targets []string `json:"targets,omitempty"`
	// nodesLeftOut are nodes that run (HostNetwork) or could carry (NodePort, the ingress nodes)
	// the shard's routers but are left out of its DNS answer, each with why: the operator's cue
	// that a cordon, a taint or a sick node took addresses out. The most pressing reasons first
	// (NotReady, Deleting, Cordoned, NoExecuteTaint, NoAddress, NotSelected), then by name; at
	// most MaxNodesLeftOut.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	NodesLeftOut []NodeLeftOut `json:"nodesLeftOut,omitempty"`
	// nodesLeftOutCount counts them all (nodesLeftOut may list fewer).
	// +optional
	NodesLeftOutCount int32 `json:"nodesLeftOutCount,omitempty"`
}

// MaxNodesLeftOut bounds status.shards[].nodesLeftOut: a NodePort shard may span every node.
const MaxNodesLeftOut = 16

// NodeLeftOut is a node left out of a shard's DNS answer, and why.
type NodeLeftOut struct {
	Name string `json:"name"`
	// reason: NotReady, Deleting, Cordoned, NoExecuteTaint, NoAddress (none of the profile's
	// dns.addressTypes) or NotSelected (a router runs on a node the profile's
	// dns.ingressNodeSelector does not select).
	Reason NodeLeftOutReason `json:"reason"`
}

// NodeLeftOutReason says why a node is out of a shard's DNS answer.
// +kubebuilder:validation:Enum=Cordoned;NotReady;Deleting;NoExecuteTaint;NotSelected;NoAddress
type NodeLeftOutReason string

// Why a node is left out of DNS (dnsrecords.LeftOut checks them in its own order).
const (
	NodeDeleting       NodeLeftOutReason = "Deleting"
	NodeCordoned       NodeLeftOutReason = "Cordoned"
	NodeNotSelected    NodeLeftOutReason = "NotSelected"
	NodeNoExecuteTaint NodeLeftOutReason = "NoExecuteTaint"
	NodeNotReady       NodeLeftOutReason = "NotReady"
	NodeNoAddress      NodeLeftOutReason = "NoAddress"
)
