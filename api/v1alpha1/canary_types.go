package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// CanarySettings: every shard gets a canary route in its user cluster, which the controller
// requests from the seed through DNS and the shard's routers, as a user would.
type CanarySettings struct {
	// disabled turns the canary off for the profile's clusters (for example when the seed cannot
	// reach their routers); RoutesServing is then not reported.
	// +optional
	Disabled bool `json:"disabled,omitempty"`
}

// CanaryStatus is the last verdict of one shard's canary.
type CanaryStatus struct {
	// shard the canary runs through.
	Shard string `json:"shard"`
	// host the canary requests: shardgate-canary.<shard domain>.
	Host string `json:"host"`
	// conditions: RoutesServing (True while the host resolves at the authoritative servers and
	// every address answers through the shard's routers; False says the last failure).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// RoutesServing and its reasons.
const (
	ConditionRoutesServing = "RoutesServing"
	ReasonServing          = "Serving"
	ReasonNotResolving     = "NotResolving"
	ReasonNotAnswering     = "NotAnswering"
	// ReasonAddressRefused: the canary name resolves to an address the canary never requests
	// (loopback, link-local, --canary-refuse-cidrs).
	ReasonAddressRefused = "AddressRefused"
	ReasonCanaryPending  = "CanaryPending"
)
