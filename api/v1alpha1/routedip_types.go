package v1alpha1

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Routed IPs: a cloud's floating ("routed") address moved, through Jobs a ClusterRoutedIPClass
// defines, to one healthy node that serves a Service. The class lives in the seed (it holds the
// cloud credentials); RoutedIPs live in user clusters (Shardgate installs the CRD there and
// creates one per address of a shard with publishing RoutedIP; cluster owners may create their
// own for their Services). The seed's ClusterIngress status.routedIPs is the record of who holds
// what: the user cluster's RoutedIP status mirrors it and is never read back.

// RoutedIPTaintKey marks the node that holds (or is about to receive) a routed IP. Its effect is
// PreferNoSchedule: the scheduler steers new pods that do not tolerate it to other nodes, so the
// node carrying the cluster's ingress traffic stays lightly loaded, and `kubectl describe node`
// shows which node holds an address; it never evicts a pod and never blocks one that has nowhere
// else to go, so it is harmless to workloads that do not tolerate it. Routers tolerate it.
const RoutedIPTaintKey = "shardgate.io/routed-ip"

// Job inputs: the environment of every container of a class's Jobs, besides the class's Secrets.
const (
	// EnvRoutedIP is the address to assign (updateRoutedIP).
	EnvRoutedIP = "SHARDGATE_ROUTED_IP"
	// EnvNodeName is the user-cluster node that is to hold it (updateRoutedIP).
	EnvNodeName = "SHARDGATE_NODE_NAME"
	// EnvNodeProviderID is that node's spec.providerID: the cloud's instance (updateRoutedIP).
	EnvNodeProviderID = "SHARDGATE_NODE_PROVIDER_ID"
	// EnvClusterID is the user cluster's ID (both Jobs).
	EnvClusterID = "SHARDGATE_CLUSTER_ID"
	// EnvFirewallRules is the class's whole firewall map as JSON, a FirewallRule list
	// (updateFirewall).
	EnvFirewallRules = "SHARDGATE_FIREWALL_RULES"
)

// ClusterRoutedIPClass says how routed IPs of one cloud are moved: which addresses it may hand
// out, the Jobs that talk to the cloud, their credentials, and the cloud's limits.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Post Allow",type=boolean,JSONPath=`.spec.firewallPostAllow`
// +kubebuilder:printcolumn:name="Per Node",type=integer,JSONPath=`.spec.perNodeIPLimit`
// +kubebuilder:printcolumn:name="Firewall",type=string,JSONPath=`.status.conditions[?(@.type=="FirewallApplied")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterRoutedIPClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterRoutedIPClassSpec   `json:"spec"`
	Status ClusterRoutedIPClassStatus `json:"status,omitempty"`
}

// ClusterRoutedIPClassSpec is the operator's.
type ClusterRoutedIPClassSpec struct {
	// addresses the class may assign: IPs, CIDRs or ranges ("203.0.113.10",
	// "203.0.113.16/28", "203.0.113.40-203.0.113.49"). A RoutedIP for any other address is
	// refused: a cluster owner cannot make the seed's credentials move an address they were not
	// given.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=100
	Addresses []string `json:"addresses"`
	// profiles: the IngressProfiles whose clusters may use the class; empty: every profile.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	Profiles []string `json:"profiles,omitempty"`
	// allowClusterOwners: cluster owners' own RoutedIPs may use the class (Shardgate's RoutedIP
	// shards always may). Off by default: the class's addresses and credentials are the seed
	// operator's, handed to tenants only on purpose.
	// +optional
	AllowClusterOwners bool `json:"allowClusterOwners,omitempty"`
	// providerIDPattern proves that an instance belongs to the cluster: a node is given an
	// address, and has ports opened, only when its spec.providerID (written by the cluster's
	// owner) matches this regular expression in full. "{clusterID}" in it stands for the
	// cluster's accepted ID (status.clusterID of its ClusterIngress), so one pattern names each
	// cluster's own instances, e.g. "gce://my-project/europe-west3-[abc]/{clusterID}--[a-z0-9]+"
	// where instance names are the cluster ID, a separator and a suffix. Choose a separator that
	// cluster IDs cannot hold at that place (IDs are DNS labels): with "{clusterID}-[a-z0-9-]+"
	// cluster "prod" would also match the instances of cluster "prod-eu". Provider IDs longer
	// than 255 characters are refused. Required: without it the class is unusable (its holdings are kept, frozen).
	// +optional
	// +kubebuilder:validation:MaxLength=512
	ProviderIDPattern string `json:"providerIDPattern,omitempty"`
	// maxPorts: how many ports (outside the NodePort range) the firewall opens for one routed IP.
	// A cluster owner's RoutedIP whose Service has more is refused.
	// +optional
	// +kubebuilder:default=8
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	MaxPorts int32 `json:"maxPorts,omitempty"`
	// firewallPostAllow: open the firewall for a new holder only after the address is assigned
	// (default: before, so the address never lands on a node whose ports are closed).
	// +optional
	FirewallPostAllow bool `json:"firewallPostAllow,omitempty"`
	// nodePortRange of the user clusters ("30000-32767"; not discoverable through the API).
	// Service ports inside it are left to the platform's NodePort rule; the firewall map holds
	// the others.
	// +optional
	// +kubebuilder:default="30000-32767"
	// +kubebuilder:validation:Pattern=`^[0-9]{1,5}-[0-9]{1,5}$`
	NodePortRange string `json:"nodePortRange,omitempty"`
	// perNodeIPLimit: how many routed IPs one node may hold (the cloud's limit).
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	PerNodeIPLimit int32 `json:"perNodeIPLimit,omitempty"`
	// fromSecretsRef: Secrets in the controller's namespace whose keys become the environment of
	// the class's Jobs (the cloud's credentials). They stay in the seed.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	FromSecretsRef []corev1.LocalObjectReference `json:"fromSecretsRef,omitempty"`
	// updateRoutedIP is the Job that assigns an address to a node; inputs in its environment
	// (SHARDGATE_ROUTED_IP, SHARDGATE_NODE_NAME, SHARDGATE_NODE_PROVIDER_ID,
	// SHARDGATE_CLUSTER_ID). Success means the address is on that node. It runs in the
	// controller's namespace of the seed.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	UpdateRoutedIP batchv1.JobSpec `json:"updateRoutedIP"`
	// updateFirewall is the Job that sets the cloud firewall to the class's whole map
	// (SHARDGATE_FIREWALL_RULES, JSON). Success means the firewall is exactly that map.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	UpdateFirewall batchv1.JobSpec `json:"updateFirewall"`
}

// FirewallRule opens one port on the instances that hold the class's routed IPs.
type FirewallRule struct {
	Port     int32           `json:"port"`
	Protocol corev1.Protocol `json:"protocol"`
	// providerIDs of the instances (nodes' spec.providerID), sorted.
	ProviderIDs []string `json:"providerIDs"`
}

// ClusterRoutedIPClassStatus is observed state.
type ClusterRoutedIPClassStatus struct {
	// firewall is the map the last successful updateFirewall Job applied.
	// +optional
	Firewall []FirewallRule `json:"firewall,omitempty"`
	// firewallHash identifies the applied map (the desired map's hash is compared to it).
	// +optional
	FirewallHash string `json:"firewallHash,omitempty"`
	// lastJob is the outcome of the class's last updateFirewall Job.
	// +optional
	LastJob *RoutedIPJobOutcome `json:"lastJob,omitempty"`
	// failures of updateFirewall Jobs in a row, and no new one before retryAfter.
	// +optional
	Failures int32 `json:"failures,omitempty"`
	// +optional
	RetryAfter *metav1.Time `json:"retryAfter,omitempty"`
	// conditions: FirewallApplied.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ClusterRoutedIPClassList is a list of ClusterRoutedIPClasses.
// +kubebuilder:object:root=true
type ClusterRoutedIPClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterRoutedIPClass `json:"items"`
}

// RoutedIP asks for a routed address on one node that serves a Service. Installed into user
// clusters by Shardgate.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Address",type=string,JSONPath=`.spec.address`
// +kubebuilder:printcolumn:name="Service",type=string,JSONPath=`.spec.serviceRef.name`
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.status.assignedNode`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Assigned")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RoutedIP struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RoutedIPSpec   `json:"spec"`
	Status RoutedIPStatus `json:"status,omitempty"`
}

// ServiceReference names a Service.
type ServiceReference struct {
	// name of the Service.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// namespace of the Service; empty means the RoutedIP's. Only the RoutedIP's own namespace
	// is accepted (a namespace's owner cannot steer an address by another's Service).
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// RoutedIPSpec is the cluster owner's (or Shardgate's, for shards).
type RoutedIPSpec struct {
	// className of the seed's ClusterRoutedIPClass that moves the address.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	ClassName string `json:"className"`
	// address to route (IPv4), one of the class's addresses.
	// +kubebuilder:validation:MinLength=7
	// +kubebuilder:validation:MaxLength=15
	Address string `json:"address"`
	// serviceRef: the address goes to a node running a ready endpoint of this Service.
	ServiceRef ServiceReference `json:"serviceRef"`
}

// RoutedIPPhase is where a routed IP stands.
// +kubebuilder:validation:Enum=Pending;Moving;Assigned;Refused
type RoutedIPPhase string

// RoutedIP phases.
const (
	// RoutedIPPending: no node holds it yet and none is being given it.
	RoutedIPPending RoutedIPPhase = "Pending"
	// RoutedIPMoving: a Job is giving it to a node (the previous holder, if any, keeps it until
	// that Job succeeds).
	RoutedIPMoving RoutedIPPhase = "Moving"
	// RoutedIPAssigned: a node holds it and is the elected one.
	RoutedIPAssigned RoutedIPPhase = "Assigned"
	// RoutedIPRefused: the RoutedIP cannot be served as written (see the Assigned condition).
	RoutedIPRefused RoutedIPPhase = "Refused"
)

// RoutedIPJobOutcome is what the last Job of a move (or of a class's firewall) did.
type RoutedIPJobOutcome struct {
	// name of the Job (deleted once read).
	Name string `json:"name"`
	// kind: UpdateRoutedIP or UpdateFirewall.
	Kind string `json:"kind"`
	// succeeded or not.
	Succeeded bool `json:"succeeded"`
	// message: the Job's failure condition (reason and message), fixed text on success.
	// +optional
	Message string `json:"message,omitempty"`
	// finishedTime of the Job.
	// +optional
	FinishedTime *metav1.Time `json:"finishedTime,omitempty"`
}

// RoutedIPStatus mirrors the seed's record.
type RoutedIPStatus struct {
	// assignedNode holds the address now (the last successful updateRoutedIP Job).
	// +optional
	AssignedNode string `json:"assignedNode,omitempty"`
	// movingTo is the node a running move gives it to.
	// +optional
	MovingTo string `json:"movingTo,omitempty"`
	// +optional
	Phase RoutedIPPhase `json:"phase,omitempty"`
	// lastJob is the outcome of the last updateRoutedIP Job.
	// +optional
	LastJob *RoutedIPJobOutcome `json:"lastJob,omitempty"`
	// conditions: Assigned (reason Assigned, Moving, NoEligibleNode, MoveFailed, ClassNotFound,
	// AddressNotInClass, AddressInUse, ServiceNotAllowed).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// RoutedIPList is a list of RoutedIPs.
// +kubebuilder:object:root=true
type RoutedIPList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RoutedIP `json:"items"`
}

// RoutedIPSettings of a shard with publishing RoutedIP: its routers bind the node's ports as with
// HostNetwork, Shardgate creates a RoutedIP per address for the routers' Service, and DNS answers
// the addresses.
type RoutedIPSettings struct {
	// className of the seed's ClusterRoutedIPClass.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	ClassName string `json:"className"`
	// addresses to route to the shard's routers, each on a different node where the class's
	// perNodeIPLimit says so.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=15
	Addresses []string `json:"addresses"`
}

// RoutedIPRecord is the seed's record of one routed IP of a user cluster: the truth of who holds
// it, since only the class's Jobs move it.
type RoutedIPRecord struct {
	// address routed.
	Address string `json:"address"`
	// className moving it.
	ClassName string `json:"className"`
	// routedIP is the user cluster's RoutedIP, namespace/name.
	RoutedIP string `json:"routedIP"`
	// node holding it (the last successful updateRoutedIP Job); empty before the first.
	// +optional
	Node string `json:"node,omitempty"`
	// providerID of that node.
	// +optional
	ProviderID string `json:"providerID,omitempty"`
	// movingTo: the node a move in progress gives it to.
	// +optional
	MovingTo string `json:"movingTo,omitempty"`
	// movingProviderID of that node.
	// +optional
	MovingProviderID string `json:"movingProviderID,omitempty"`
	// movingSince: when the move started (for the move-duration metric).
	// +optional
	MovingSince *metav1.Time `json:"movingSince,omitempty"`
	// failures of the move in progress, in a row (the next Job waits 5 s × 2^(failures-1), at
	// most 5 min).
	// +optional
	Failures int32 `json:"failures,omitempty"`
	// retryAfter: no new Job before this time.
	// +optional
	RetryAfter *metav1.Time `json:"retryAfter,omitempty"`
	// ports the firewall must open on the holder: the Service's ports outside the class's
	// NodePort range.
	// +optional
	Ports []FirewallPort `json:"ports,omitempty"`
	// lastJob of this address.
	// +optional
	LastJob *RoutedIPJobOutcome `json:"lastJob,omitempty"`
	// phase and reason, as on the RoutedIP.
	// +optional
	Phase RoutedIPPhase `json:"phase,omitempty"`
	// +optional
	Reason string `json:"reason,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}

// FirewallPort is one port of a Service.
type FirewallPort struct {
	Port     int32           `json:"port"`
	Protocol corev1.Protocol `json:"protocol"`
}

func init() {
	register(&ClusterRoutedIPClass{}, &ClusterRoutedIPClassList{}, &RoutedIP{}, &RoutedIPList{})
}
