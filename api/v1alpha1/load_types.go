package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ShardLoadSpec: the shard's routers report their load (a load reporter beside each router reads
// the router's own metrics on the pod's loopback and renews a Lease in the user cluster), which
// the LeastUtilized strategy allocates by and which tells the admin when the shard is saturated.
// Every shard of a cluster whose strategy is LeastUtilized reports, with the defaults below.
type ShardLoadSpec struct {
	// requestsPerSecond one router of the shard serves at full utilization; empty means the
	// flavour's default (Traefik: 2000).
	// +optional
	// +kubebuilder:validation:Minimum=1
	RequestsPerSecond *int32 `json:"requestsPerSecond,omitempty"`
	// saturationPercent: the shard is Saturated while its utilization (requests per ready router
	// against requestsPerSecond, averaged over the reporters' window) is at or above it, and stops
	// being so once it is 10 points below (hysteresis). Default 80.
	// +optional
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=1000
	SaturationPercent *int32 `json:"saturationPercent,omitempty"`
	// reporterImage is the load reporter's image (shardgate-vip-agent); empty means the VIP
	// agent's default image.
	// +optional
	ReporterImage string `json:"reporterImage,omitempty"`
	// maxReplicas makes the shard's routers follow load (opt-in): between the shard's replicas
	// (the least) and maxReplicas, and on the host network no more than its eligible nodes. Up at
	// once when the load asks for more; down one router at a time once the load has asked for
	// fewer for scaleDownDelay (the router leaves DNS, drains, then goes). Never on unknown load.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`
	// targetPercent is the utilization routers that follow load are scaled to keep. Default 60.
	// +optional
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=100
	TargetPercent *int32 `json:"targetPercent,omitempty"`
	// scaleDownDelay is how long the load must ask for fewer routers before one goes. Default 5m.
	// +optional
	ScaleDownDelay *metav1.Duration `json:"scaleDownDelay,omitempty"`
}

// ShardLoadStatus is one shard's load as its routers last reported it.
type ShardLoadStatus struct {
	// shard the figures are for.
	Shard string `json:"shard"`
	// state: Normal, Saturated, or Unknown (no router reports fresh figures).
	State ShardLoadState `json:"state"`
	// utilizationPercent: requests per second per reporting router against the shard's capacity.
	// +optional
	UtilizationPercent int32 `json:"utilizationPercent,omitempty"`
	// requestsPerSecond, summed over the reporting routers (rounded).
	// +optional
	RequestsPerSecond int64 `json:"requestsPerSecond,omitempty"`
	// bytesInPerSecond and bytesOutPerSecond, summed over the reporting routers (rounded).
	// +optional
	BytesInPerSecond int64 `json:"bytesInPerSecond,omitempty"`
	// +optional
	BytesOutPerSecond int64 `json:"bytesOutPerSecond,omitempty"`
	// openConnections, summed over the reporting routers.
	// +optional
	OpenConnections int64 `json:"openConnections,omitempty"`
	// reportingRouters: how many routers' reports are fresh.
	// +optional
	ReportingRouters int32 `json:"reportingRouters,omitempty"`
	// capacityRequestsPerSecond is one router's capacity the utilization is measured against.
	// +optional
	CapacityRequestsPerSecond int32 `json:"capacityRequestsPerSecond,omitempty"`
	// clamped says which reported figures were absurd and were clamped (the user cluster's
	// reports are its owner's to write).
	// +optional
	Clamped string `json:"clamped,omitempty"` // replicas the shard's routers run while they follow load (ShardLoadSpec.MaxReplicas).
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// belowTargetSince is when the load began to ask for fewer routers than run (scale-down waits
	// scaleDownDelay from it).
	// +optional
	BelowTargetSince *metav1.Time `json:"belowTargetSince,omitempty"`
}

// ShardLoadState is a shard's load state.
// +kubebuilder:validation:Enum=Normal;Saturated;Unknown
type ShardLoadState string

// Shard load states.
const (
	LoadNormal    ShardLoadState = "Normal"
	LoadSaturated ShardLoadState = "Saturated"
	LoadUnknown   ShardLoadState = "Unknown"
)

// ShardsSaturated and its reasons: True while a reporting shard is Saturated (the admin's cue to
// add routers or shards); False when none is; Unknown when no shard's load is known.
const (
	ConditionShardsSaturated = "ShardsSaturated"
	ReasonSaturated          = "Saturated"
	ReasonWithinCapacity     = "WithinCapacity"
	ReasonLoadUnknown        = "LoadUnknown"
)

// CustomStrategyApplied and its reasons, present while a profile sets an allocation score or
// extender: True while they decided every new route of the last allocation pass that had any,
// False (FellBack) when the built-in strategy decided some instead, with the first reason.
const (
	ConditionCustomStrategyApplied = "CustomStrategyApplied"
	ReasonApplied                  = "Applied"
	ReasonFellBack                 = "FellBack"
	ReasonNoNewRoutes              = "NoNewRoutes"
)
