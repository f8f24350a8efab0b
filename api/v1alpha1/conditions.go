package v1alpha1

// Who writes what of a ClusterIngress. Each controller owns only its own conditions and status
// fields (pkg/controller/cistatus/owners.go declares them; each has exactly one owner) and is
// woken only by changes it decides from. A controller reads the status through the status board
// (pkg/controller/cistatus.Board: its own and the others' latest parts over the cached object),
// edits its part and posts it; one writer per cluster composes every part and the Ready they add
// up to and writes them in one server-side apply (field manager "shardgate"): no two controllers
// write the same status, so no write conflicts, and a burst of posts is one write. Where a part
// must be stored before the controller goes on, it writes it at once (Board.Write).
//
//	controller  (package)                 owns
//	lifecycle   pkg/controller/lifecycle  spec; SourceAvailable (a missing source written at
//	                                      once: its time starts the removal grace); the cleanup
//	                                      annotation; deletes it
//	engagement  pkg/controller/engagement nothing (engages the cluster; DNS reports the outcome)
//	identity    pkg/controller/identity   DomainAssigned; clusterID, domain (who holds a domain:
//	                                      pkg/clusterid), decided reachable cluster or not
//	dns         pkg/controller/dns        ClusterReachable, DNSPublished (for the domain the
//	                                      identity gave; its reason while none is held);
//	                                      readyNodes, readyNodeCount, targets, targetsSummary,
//	                                      shards, dnsEndpointRef, lastPublishedTime, dnsVerifiedBy,
//	                                      observedGeneration; finalizer dns-cleanup. A cluster's
//	                                      first status waits for this part (it says whether the
//	                                      cluster is still being contacted).
//	shards      pkg/controller/shards     ShardsAvailable, RoutesProtected, GatewayAPIAvailable
//	                                      (CleanupPending written at once while the cluster is
//	                                      deleted); finalizer user-cluster-cleanup
//	allocation  pkg/controller/allocation routes, rejectedRoutes; finalizer allocation-cleanup
//	certificates pkg/controller/certificates CertificateReady; certificate (and the cert-manager
//	                                      Certificate it owns in the seed)
//	vips        pkg/controller/vips       VIPsAvailable; vips (addresses and router IDs per VIP
//	                                      shard, allocated per L2 domain; holders observed)
//	routedips   pkg/controller/routedips  RoutedIPsAssigned; routedIPs (the record of which node
//	                                      holds each routed IP, written at once: Jobs follow it);
//	                                      the user cluster's RoutedIPs (shards' ones, every
//	                                      status), holder taints; the classes' status and Jobs
//	claims      pkg/controller/claims     claims (status.claims: the claimed shards, written at
//	                                      once, before the claims' own status); the user
//	                                      cluster's IngressClaims' status
//	canary      pkg/controller/canary     RoutesServing; canaries
//	(writer)    pkg/controller/cistatus   Ready, from a declared list (cistatus/ready.go says why
//	                                      DomainAssigned, RoutesProtected, GatewayAPIAvailable,
//	                                      RoutedIPsAssigned and RoutesServing are left out)
//
// Ready summarises SourceAvailable, ClusterReachable, ShardsAvailable, DNSPublished and, when
// TLS is on, CertificateReady, and with VIP shards, VIPsAvailable. The
// profile controller (pkg/controller/profile) writes IngressProfile status: Valid,
// matchingClusters, observedGeneration.

// Condition types on ClusterIngress.
const (
	// ConditionDomainAssigned: the cluster holds the domain it asks for (<spec.clusterID>.<zone>
	// is status.domain, reason DomainHeld). False says why not: the ID or zone is invalid, or
	// another cluster holds the domain or still publishes names under it (ClusterIDConflict).
	// Decided whether or not the user cluster can be observed; while the domain is not held,
	// DNSPublished says False with the same reason and message.
	ConditionDomainAssigned = "DomainAssigned"
	// ConditionClusterReachable: the user cluster's API server answers and its cache is synced.
	ConditionClusterReachable = "ClusterReachable"
	// ConditionDNSPublished: the DNSEndpoint holds the records for the cluster's current ready
	// ingress nodes. external-dns then publishes them; judge the DNS server itself for the rest.
	ConditionDNSPublished = "DNSPublished"
	// ConditionShardsAvailable: every shard's router objects are applied and each shard has a
	// ready router.
	ConditionShardsAvailable = "ShardsAvailable"
	// ConditionSourceAvailable: the cluster's source (Cluster API Cluster or kubeconfig Secret)
	// exists. While it is missing, the cluster's records and objects are kept for the removal
	// grace period, so a source deleted and recreated (GitOps) loses nothing.
	ConditionSourceAvailable = "SourceAvailable"
	// ConditionRoutesProtected: the admission policy that reserves allocation labels and
	// annotations to Shardgate is installed in the user cluster.
	ConditionRoutesProtected = "RoutesProtected"
	// ConditionCertificateReady: the cluster's certificate is issued, valid now, covers every
	// name of the cluster and its shards, and has been handed to the routers.
	ConditionCertificateReady = "CertificateReady"
	// ConditionVIPsAvailable: every VIP shard has all its VIPs allocated and each is observed
	// held by a node.
	ConditionVIPsAvailable = "VIPsAvailable"
	// ConditionRoutedIPsAssigned: every routed IP of the cluster is held by an elected node.
	ConditionRoutedIPsAssigned = "RoutedIPsAssigned"
	// ConditionReady summarises the others.
	ConditionReady = "Ready"
)

// Condition types on IngressProfile.
const (
	// ConditionValid: the profile's settings are usable.
	ConditionValid = "Valid"
)

// Condition reasons.
const (
	ReasonReachable            = "Reachable"
	ReasonUnreachable          = "Unreachable"
	ReasonCredentialsRefused   = "CredentialsRefused"
	ReasonServerError          = "ServerError"
	ReasonConnecting           = "Connecting"
	ReasonControlPlaneNotReady = "ControlPlaneNotInitialized"
	ReasonKubeconfigMissing    = "KubeconfigSecretMissing"
	ReasonKubeconfigInvalid    = "KubeconfigInvalid"
	ReasonInvalidClusterID     = "InvalidClusterID"
	ReasonClusterIDConflict    = "ClusterIDConflict"
	ReasonDomainHeld           = "DomainHeld"
	// ReasonDomainYielded: another cluster holds the domain in status and publishes its names;
	// this cluster, which published them too (two holders after a race or a rollback), removes
	// its records so that one cluster publishes each name.
	ReasonDomainYielded     = "DomainYielded"
	ReasonInvalidZone       = "InvalidZone"
	ReasonZoneNotServed     = "ZoneNotServed"
	ReasonNamesTooLong      = "NamesTooLong"
	ReasonSourcePresent     = "SourcePresent"
	ReasonSourceMissing     = "SourceMissing"
	ReasonPolicyInstalled   = "AdmissionPolicyInstalled"
	ReasonPolicyUnsupported = "AdmissionPolicyUnsupported"
	ReasonCleanupPending    = "CleanupPending"
	ReasonProfileInvalid    = "ProfileInvalid"
	ReasonPublished         = "Published"
	// ReasonPropagating: the DNSEndpoint is written, the zone's authoritative servers do not
	// answer its targets yet (only with --dns-verify-servers).
	ReasonPropagating       = "Propagating"
	ReasonKeptLastTargets   = "NoReadyNodesKeptLastTargets"
	ReasonNoReadyNodes      = "NoReadyNodes"
	ReasonStaleRecordsKept  = "ClusterUnreachableRecordsKept"
	ReasonDNSWriteFailed    = "DNSEndpointWriteFailed"
	ReasonReady             = "Ready"
	ReasonShardsAvailable   = "ShardsAvailable"
	ReasonShardsInvalid     = "InvalidShards"
	ReasonShardsApplyFailed = "ApplyFailed"
	// ReasonRouterRoleMissing, ReasonRouterRoleDiffers: a router ClusterRole Shardgate may only
	// bind (config/user-cluster/rbac.yaml) is absent, or grants other than what Shardgate renders.
	ReasonRouterRoleMissing      = "RouterRoleMissing"
	ReasonRouterRoleDiffers      = "RouterRoleDiffers"
	ReasonNoRouterReady          = "NoRouterReady"
	ReasonNoNodeMatchesSelector  = "NoNodeMatchesSelector"
	ReasonPodsUnschedulable      = "PodsUnschedulable"
	ReasonNotReady               = "NotReady"
	ReasonValid                  = "Valid"
	ReasonClusterSelectorBad     = "InvalidClusterSelector"
	ReasonIngressNodeSelectorBad = "InvalidIngressNodeSelector"
	ReasonTLSInvalid             = "InvalidTLS"
	// CertificateReady reasons.
	ReasonCertificateIssued     = "Issued"
	ReasonCertificateIssuing    = "Issuing"
	ReasonIssuerNotFound        = "IssuerNotFound"
	ReasonIssuerNotReady        = "IssuerNotReady"
	ReasonIssuanceFailed        = "IssuanceFailed"
	ReasonChallengeFailed       = "DNS01ChallengeFailed"
	ReasonRateLimited           = "RateLimited"
	ReasonCertificateExpired    = "Expired"
	ReasonCertificateMismatched = "NamesNotCovered"
	ReasonCertificateInvalid    = "InvalidKeyPair"
	ReasonCertManagerMissing    = "CertManagerNotInstalled"
	// ReasonIssuanceQueued: a first certificate or new names wait for the seed's ACME budget.
	ReasonIssuanceQueued = "IssuanceQueued"
	// ReasonCertificateUnexpectedNames: the issued key pair names more than the cluster's
	// Certificate asks for; it is never handed to the routers.
	ReasonCertificateUnexpectedNames = "UnexpectedNames"
	// ReasonNamesLeftOut (with True): served, but shards past the 100-name limit are not covered.
	ReasonNamesLeftOut = "NamesLeftOut"
	// VIPsAvailable reasons.
	ReasonVIPsHeld    = "VIPsHeld"
	ReasonVIPsNotHeld = "VIPsNotHeld"
	// ReasonDuplicateHolder: two or more nodes report holding one VIP (a split: each is master).
	ReasonDuplicateHolder = "DuplicateHolder"
	ReasonPoolExhausted   = "PoolExhausted"
	// ReasonRouterIDsExhausted: every VRRP router ID of the cluster's range is in use in its L2
	// domain (spec.vip.routerIDs of the profile).
	ReasonRouterIDsExhausted = "RouterIDsExhausted"
	ReasonPoolInvalid        = "InvalidPool"
	ReasonAddressInUse       = "AddressInUse"
	// ReasonNodeAddressConflict: a node of this cluster reports an address that is another
	// cluster's VIP (the VIP stays with its holder).
	ReasonNodeAddressConflict = "NodeAddressConflict"
	ReasonNoPool              = "NoPool"
	// ReasonNodesNotObserved: the cluster's nodes cannot be read yet; it keeps what it holds and
	// gets no new VIP until they can.
	ReasonNodesNotObserved = "NodesNotObserved"
	// RoutedIPsAssigned and RoutedIP Assigned reasons.
	ReasonRoutedIPsAssigned = "Assigned"
	ReasonRoutedIPMoving    = "Moving"
	ReasonNoEligibleNode    = "NoEligibleNode"
	ReasonMoveFailed        = "MoveFailed"
	ReasonClassNotFound     = "ClassNotFound"
	ReasonClassInvalid      = "ClassInvalid"
	ReasonClassNotAllowed   = "ClassNotAllowed"
	ReasonAddressNotInClass = "AddressNotInClass"
	ReasonServiceNotAllowed = "ServiceNotAllowed"
	// ReasonTooManyPorts: the RoutedIP's Service has more ports than the class's maxPorts.
	ReasonTooManyPorts        = "TooManyPorts"
	ReasonRoutedIPsNotAllowed = "RoutedIPsNotAllowed"
	// ClusterRoutedIPClass FirewallApplied reasons (and Valid).
	ConditionFirewallApplied = "FirewallApplied"
	ReasonFirewallApplied    = "Applied"
	ReasonFirewallUpdating   = "Updating"
	ReasonFirewallFailed     = "UpdateFailed"
)

// Allocation outcomes (annotation values and Event reasons in user clusters).
const (
	AllocationAllocated = "Allocated"
	AllocationRejected  = "Rejected"
	AllocationMoved     = "Moved"
	// AllocationReleased is the Event when an Ingress moved to another ingress class: Shardgate
	// takes its label and annotations back (users may not remove them themselves).
	AllocationReleased = "Released"
)

// ReasonObjectBudgetExceeded (ClusterReachable=False): the user cluster holds more objects of a
// kind than the per-cluster budget, or one too large; Shardgate stopped reading it and changes
// nothing in it until it is within its budget again.
const ReasonObjectBudgetExceeded = "ObjectBudgetExceeded"

// ClaimedShardsWithoutRouters is where ShardsAvailable's message goes on from the profile's shards
// to the claimed ones without a ready router: "<shard>: why; ...; N" + it + " ...". Doctor reads
// the profile's shards from the message up to it.
const ClaimedShardsWithoutRouters = " claimed shard(s) without a ready router"
