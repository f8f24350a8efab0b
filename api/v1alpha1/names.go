package v1alpha1

// Labels, annotations and finalizers Shardgate reads or writes.
const (
	// ClusterIDAnnotation on a Cluster or kubeconfig Secret overrides the cluster ID (default: the
	// object's name). It must be one RFC 1123 label, unique in the seed.
	ClusterIDAnnotation = "shardgate.io/cluster-id"
	// KubeconfigSecretLabel marks a Secret (key "value" or "kubeconfig") as a user cluster for seeds
	// without Cluster API.
	KubeconfigSecretLabel = "shardgate.io/kubeconfig"
	// DNSCleanupFinalizer keeps a ClusterIngress until its DNSEndpoint is gone, so records are
	// removed even when the controller was down while the cluster was deleted.
	DNSCleanupFinalizer = "shardgate.io/dns-cleanup"
	// UserClusterCleanupFinalizer keeps a ClusterIngress (and its engagement) until Shardgate's
	// objects are gone from the user cluster: with AllocationCleanupFinalizer, a cluster that
	// stops being selected is left as if Shardgate had never been there.
	UserClusterCleanupFinalizer = "shardgate.io/user-cluster-cleanup"
	// AllocationCleanupFinalizer keeps a ClusterIngress (and its engagement) until the cluster's
	// Ingresses no longer carry Shardgate's label, allocation annotations and addresses.
	AllocationCleanupFinalizer = "shardgate.io/allocation-cleanup"
	// RoutedIPCleanupFinalizer keeps a ClusterIngress with routed IPs (and its engagement) until
	// the holder taints are off its nodes and its shards' RoutedIPs are gone.
	RoutedIPCleanupFinalizer = "shardgate.io/routed-ip-cleanup"
	// CleanupAnnotation (value CleanupBestEffort) on a ClusterIngress being deleted says the
	// cluster itself is going away (its Cluster is being deleted, or its source is gone): the
	// user-cluster cleanup runs if the cluster can be observed and is skipped if not, instead of
	// holding the ClusterIngress for a cluster that may never answer again.
	CleanupAnnotation = "shardgate.io/cleanup"
	CleanupBestEffort = "best-effort"
	// ManagedByLabel (value ManagedByValue) marks every object Shardgate owns in a user cluster;
	// the user-cluster caches select by it.
	ManagedByLabel = "shardgate.io/managed-by"
	ManagedByValue = "shardgate"
	// DNSShareLabel on a DNSEndpoint names the seed external-dns instance that publishes it
	// ("0".."N-1" for the controller's --dns-shares=N; see dnsrecords.Share).
	DNSShareLabel = "shardgate.io/dns-share"
	// ShardLabel names a shard: on its router objects, and on Ingresses allocated to it (each
	// shard's router serves only its label).
	ShardLabel = "shardgate.io/shard"
	// Annotations that tell a user where an Ingress landed. Only Shardgate may set them (a
	// ValidatingAdmissionPolicy in each user cluster enforces it, with the shard label).
	AllocationAnnotation  = "shardgate.io/allocation" // "Allocated" or "Rejected: <reason>"
	ShardAnnotation       = "shardgate.io/shard"
	HostsAnnotation       = "shardgate.io/hosts"        // final hosts, comma-separated
	CNAMETargetAnnotation = "shardgate.io/cname-target" // what a custom host must CNAME to
	// ShardClassAnnotation is the shard filter of routers that select routes by an ingress.class
	// annotation rather than by label (HAProxy's controller reads any prefix's "ingress.class"):
	// on a route allocated to such a shard, its routers' class (ShardClassPrefix + the shard).
	ShardClassAnnotation = "shardgate.io/ingress.class"
	// ShardClassPrefix begins every shard's router class. Only Shardgate may set an ingress.class
	// annotation, of any prefix, whose value begins with it: it would pick a shard's routers.
	ShardClassPrefix = "shardgate-shard-"
	// FieldOwner is the server-side-apply field manager of everything Shardgate writes.
	FieldOwner = "shardgate"
)

// AllocationAnnotations are the annotations Shardgate writes on an Ingress (besides the shard
// label); only Shardgate may set them.
var AllocationAnnotations = []string{AllocationAnnotation, ShardAnnotation, HostsAnnotation, CNAMETargetAnnotation,
	ShardClassAnnotation, KeptForAnnotation}

// Cluster source kinds in ClusterReference.Kind.
const (
	SourceKindCluster = "Cluster" // Cluster API cluster.x-k8s.io Cluster
	SourceKindSecret  = "Secret"  // a Secret labelled shardgate.io/kubeconfig
	// SourceKindKubermatic is a Kubermatic kubermatic.k8c.io Cluster (cluster-scoped; its
	// ClusterIngress lives in the cluster's seed namespace).
	SourceKindKubermatic = "KubermaticCluster"
)
