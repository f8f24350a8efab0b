package v1alpha1

// GatewayAPIMode says whether Shardgate offers Gateway API in a profile's clusters.
// +kubebuilder:validation:Enum=Enabled;Disabled
type GatewayAPIMode string

// Gateway API modes.
const (
	// GatewayAPIEnabled: Shardgate installs Gateway API's standard CRDs (the release it pins) where
	// a cluster has none, keeps those it installed up to date, uses those someone else installed as
	// they are, and caches the kinds the cluster serves.
	GatewayAPIEnabled GatewayAPIMode = "Enabled"
	// GatewayAPIDisabled: Shardgate installs nothing of Gateway API and caches none of it. CRDs
	// already in the cluster stay (deleting a CRD deletes every object of it).
	GatewayAPIDisabled GatewayAPIMode = "Disabled"
)

// ResolveGatewayAPI returns the mode with its default filled in (Disabled: turning it on gives
// every router of the profile's clusters the Gateway provider, a rollout an upgrade must not start
// by itself).
func ResolveGatewayAPI(m GatewayAPIMode) GatewayAPIMode {
	if m == "" {
		return GatewayAPIDisabled
	}
	return m
}

// GatewayAPIOn says whether a ClusterIngress' cluster is offered Gateway API (a spec written before
// the setting existed is not: Disabled is the default).
func (s *ClusterIngressSpec) GatewayAPIOn() bool {
	return ResolveGatewayAPI(s.GatewayAPI) == GatewayAPIEnabled
}

// ConditionGatewayAPIAvailable: the user cluster serves Gateway API's GatewayClass, Gateway and
// HTTPRoute at v1, from CRDs Shardgate installed or someone else's, found at each engagement.
// Not part of Ready: Gateway API is optional, and Ingresses are served without it.
const ConditionGatewayAPIAvailable = "GatewayAPIAvailable"

// GatewayAPIAvailable reasons.
const (
	// ReasonGatewayAPIInstalled (True): the CRDs are Shardgate's, installed or upgraded by it.
	ReasonGatewayAPIInstalled = "Installed"
	// ReasonGatewayAPIPresent (True): someone else installed the CRDs; Shardgate uses them as they
	// are and never writes them (the message names their bundle version and channel).
	ReasonGatewayAPIPresent = "Present"
	// ReasonListenerSetUnavailable (True): routes are served, but ListenerSet is not served at v1
	// (standard from Gateway API v1.5).
	ReasonListenerSetUnavailable = "ListenerSetUnavailable"
	// ReasonGatewayAPITooOld (False): someone else's CRDs do not serve GatewayClass, Gateway or
	// HTTPRoute at v1 (older than Gateway API v1.0, or incomplete).
	ReasonGatewayAPITooOld = "TooOld"
	// ReasonGatewayAPINotServed (False): Shardgate's CRDs are there but not served (being deleted).
	ReasonGatewayAPINotServed = "NotServed"
	// ReasonGatewayAPIForbidden (False): Shardgate's role may not read or install the CRDs, or an
	// admission policy refused the install.
	ReasonGatewayAPIForbidden = "Forbidden"
	// ReasonGatewayAPIInstallFailed (False): the API server refused the install otherwise.
	ReasonGatewayAPIInstallFailed = "InstallFailed"
	// ReasonGatewayAPIDisabled (False): the profile turns Gateway API off (spec.gatewayAPI).
	ReasonGatewayAPIDisabled = "Disabled"
)
