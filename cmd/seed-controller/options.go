package main

import (
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/shardgate/shardgate/pkg/canary"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/nodeports"
)

// options are the controller's command-line settings.
type options struct {
	kubeconfig              string
	metricsAddr             string
	metricsSecure           bool
	metricsCertDir          string
	seedQPS                 float64
	seedBurst               int
	healthAddr              string
	pprofAddr               string
	leaderElect             bool
	leaderElectionNamespace string
	leaderElectionID        string
	leaseDuration           time.Duration
	renewDeadline           time.Duration
	retryPeriod             time.Duration
	dnsZone                 string
	servedZones             stringList
	secretNamespaces        stringList
	allowInsecure           bool
	removalGrace            time.Duration
	claimReclaimGrace       time.Duration
	kubeconfigResync        time.Duration
	concurrency             int
	routedIPJobNamespace    string
	certificateNamespace    string
	acmeOrdersPerWeek       int
	dnsVerifyServers        stringList
	dnsVerifyQPS            float64
	dnsVerifyInterval       time.Duration
	statusAddr              string
	statusCertDir           string
	canaryInterval          time.Duration
	canaryQPS               float64
	canaryProxy             string
	canaryRefuseCIDRs       stringList
	canaryAllowCIDRs        stringList
	canaryNodePorts         string
	dnsConcurrency          int
	dnsShares               int
	driftInterval           time.Duration
	maxObjects              int
	maxObjectBytes          int64
	maxKindBytes            int64

	// The IngressProfile admission webhook (admissionWebhook.go): off without a bind address.
	admissionAddr          string
	admissionConfiguration string
	admissionHosts         stringList

	// Several replicas share the clusters (pkg/replicas). The flags keep the names installed
	// charts pass (--sharding, --sharding-lease-duration); the code says replicas.
	shareClusters bool
	replicaID     string
	replicaLease  time.Duration
}

// stringList is a comma-separated flag value.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(v string) error {
	*l = nil
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

func (o *options) bind(fs *flag.FlagSet) {
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the seed cluster (default: in-cluster or $KUBECONFIG)")
	fs.Float64Var(&o.seedQPS, "kube-api-qps", 200, "requests a second to the seed's API server (its priority and fairness protects it); publishing 1,000 clusters takes ~10,000 writes; with --sharding the fence checks before writes have a budget of the same size, and the Leases 20 more")
	fs.IntVar(&o.seedBurst, "kube-api-burst", 400, "burst of requests to the seed's API server")
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint, HTTPS unless --metrics-secure=false (\"0\" disables it)")
	fs.BoolVar(&o.metricsSecure, "metrics-secure", true, "serve /metrics over HTTPS to bearer tokens whose user may get the non-resource URL /metrics (TokenReview and SubjectAccessReview at the seed's API server); false serves them over plain HTTP to anyone who reaches the port, and the metrics name every user cluster: INSECURE, only behind a proxy that authenticates")
	fs.StringVar(&o.metricsCertDir, "metrics-cert-dir", "", "directory with tls.crt and tls.key for /metrics, reloaded when they change (default: a self-signed certificate made at start)")
	fs.StringVar(&o.healthAddr, "health-probe-bind-address", ":8081", "address of the /healthz and /readyz endpoints")
	fs.StringVar(&o.pprofAddr, "pprof-bind-address", "", "address of Go's /debug/pprof endpoints, for profiling (default: off)")
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "elect a leader so that only one replica reconciles")
	fs.StringVar(&o.leaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader-election Lease (default: the pod's namespace)")
	fs.StringVar(&o.leaderElectionID, "leader-election-id", "shardgate-seed-controller", "name of the leader-election Lease")
	fs.DurationVar(&o.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long a non-leader waits before it takes over")
	fs.DurationVar(&o.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader retries renewing before it gives up")
	fs.DurationVar(&o.retryPeriod, "leader-elect-retry-period", 2*time.Second, "how often leader-election clients retry")
	fs.StringVar(&o.dnsZone, "dns-zone", "", "default DNS zone for user-cluster domains (<clusterid>.<zone>); IngressProfiles may override it")
	fs.Var(&o.servedZones, "served-zones", "comma-separated zones the seed's external-dns publishes (default: --dns-zone); a profile zone outside them gets DNSPublished=False/ZoneNotServed. \"*\" turns the check off")
	fs.Var(&o.secretNamespaces, "kubeconfig-secret-namespaces", "comma-separated seed namespaces whose Secrets labelled shardgate.io/kubeconfig register user clusters (default: the controller's own namespace)")
	fs.BoolVar(&o.allowInsecure, "allow-insecure-kubeconfigs", false, "accept user-cluster kubeconfigs with plain http:// servers or insecure-skip-tls-verify (lab seeds only)")
	fs.DurationVar(&o.removalGrace, "source-removal-grace", 5*time.Minute, "how long a cluster's records and objects outlive its deleted source, so a Secret deleted and recreated (GitOps rotation) loses nothing")
	fs.DurationVar(&o.claimReclaimGrace, "claim-reclaim-grace", 5*time.Minute, "how long every Ingress an IngressClaim bound must stay gone before its reclaim policy (Retain, Delete) applies, so an Ingress replaced with kubectl replace --force or a GitOps Replace sync loses nothing")
	fs.DurationVar(&o.kubeconfigResync, "kubeconfig-resync-period", 2*time.Minute, "how often Cluster API kubeconfig Secrets are read again (they are read by name, never watched); a refused credential re-reads at once")
	fs.DurationVar(&o.driftInterval, "drift-check-interval", 3*time.Minute, "how often the routers' RBAC, ServiceAccounts, ConfigMaps, PodDisruptionBudgets and admission policy in every user cluster are listed to repair hand edits (they are not watched: at 1,000 clusters the watches would cost 16,000 goroutines); the routers' Deployments, Services, pods and certificate are watched and repaired at once")
	fs.IntVar(&o.maxObjects, "max-objects-per-kind", clusteraccess.DefaultMaxObjects, "per-cluster budget: a user cluster holding more objects of one kind (Ingresses, Namespaces, Nodes, IngressClaims, RoutedIPs...; EndpointSlices five times it) is not read further and reported ClusterReachable=False/ObjectBudgetExceeded, its records and routers kept, and read again after a back-off from 1 to 16 min; bounds the controller's memory per cluster")
	fs.Int64Var(&o.maxObjectBytes, "max-object-bytes", clusteraccess.DefaultMaxObjectBytes, "the largest object read from a user cluster (a real API server stores none over 1.5 MiB); a larger one puts its cluster over budget like --max-objects-per-kind")
	fs.Int64Var(&o.maxKindBytes, "max-bytes-per-kind", clusteraccess.DefaultMaxKindBytes, "per-cluster budget: the bytes one kind's objects may take in the cache once trimmed (EndpointSlices five times it); past it, as past --max-objects-per-kind")
	fs.IntVar(&o.concurrency, "concurrency", 8, "user clusters each controller reconciles at once")
	fs.IntVar(&o.dnsShares, "dns-shares", 1, "seed external-dns instances that share the DNSEndpoints (the chart's externalDNS.shares): each DNSEndpoint is labelled shardgate.io/dns-share with its share, 0 to N-1")
	fs.IntVar(&o.dnsConcurrency, "dns-concurrency", 8, "user clusters the DNS controller reconciles at once: a node change writes the DNSEndpoint and posts its status, which the status writer holds until the records are out (BenchmarkSeedScale at 1,000 clusters, a hundred changing at once: 1.14 s p99 with 8; 16 and 32 did no better and made the controller conflict with its own status writes its cache had not seen yet)")
	fs.Var(&o.dnsVerifyServers, "dns-verify-servers", "comma-separated authoritative servers of the zones (host:port): DNSPublished then means they answer exactly the desired targets (Propagating until they do); default none: it means the DNSEndpoint is written")
	fs.Float64Var(&o.dnsVerifyQPS, "dns-verify-qps", 20, "DNS queries per second all verifications together may send")
	fs.DurationVar(&o.dnsVerifyInterval, "dns-verify-interval", 30*time.Second, "how often a verified cluster's answers are checked again")
	fs.StringVar(&o.statusAddr, "status-bind-address", "0", "address of the HTTPS status page and its JSON API (/api/v1/clusters) for administrators and dashboards; requests need a bearer token whose user may get ClusterIngresses in all namespaces (\"0\" disables it)")
	fs.StringVar(&o.statusCertDir, "status-cert-dir", "", "directory with tls.crt and tls.key for the status page (default: a self-signed certificate made at start)")
	fs.DurationVar(&o.canaryInterval, "canary-interval", time.Minute, "how often every shard's canary route is requested from the seed (through DNS and the shard's routers) for RoutesServing (0: no canary)")
	fs.Float64Var(&o.canaryQPS, "canary-qps", 10, "canary checks a second, for all clusters together")
	fs.Var(&o.canaryRefuseCIDRs, "canary-refuse-cidrs", "address ranges the canary never requests, besides loopback, link-local, multicast and unspecified (comma-separated CIDRs; list the seed's pod and Service ranges and its API servers)")
	fs.Var(&o.canaryAllowCIDRs, "canary-allow-cidrs", "private address ranges (RFC 1918, 100.64.0.0/10, fc00::/7) the canary may request: where user clusters' nodes are reached; the canary requests no other private address (comma-separated CIDRs; --canary-refuse-cidrs wins)")
	fs.StringVar(&o.canaryNodePorts, "canary-node-port-range", nodeports.Default, "the user clusters' node-port range: the canary requests a NodePort shard at no port outside it")
	fs.StringVar(&o.canaryProxy, "canary-proxy", "", "proxy through which the seed reaches user clusters' routers: http://host:port (a CONNECT tunnel per router address) or socks5://host:port (default: direct)")
	fs.BoolVar(&o.shareClusters, "sharding", false, "share the user clusters with the other replicas (each holds a Lease; rendezvous hashing assigns clusters; a per-cluster Lease fences hand-overs) instead of one leader doing all")
	fs.StringVar(&o.replicaID, "replica-id", "", "this replica's identity for --sharding (default: $POD_NAME, else the host name)")
	fs.DurationVar(&o.replicaLease, "sharding-lease-duration", 10*time.Second, "with --sharding: a replica whose Lease was not renewed for this long is gone and its clusters are taken over")
	fs.StringVar(&o.certificateNamespace, "certificate-namespace", "", "seed namespace of the clusters' cert-manager Certificates, their Secrets, the ACME order ledger and a namespaced Issuer (default: the controller's own namespace); no tenant may write there")
	fs.IntVar(&o.acmeOrdersPerWeek, "acme-orders-per-week", 20, "the seed's budget of new ACME orders (first certificates and changed name sets, not renewals) per week; Let's Encrypt allows 50 new certificates per registered domain per week")
	fs.StringVar(&o.admissionAddr, "admission-webhook-bind-address", "", "address of the HTTPS validating admission webhook for IngressProfiles (refuses a score or extender the controller would report invalid); default off")
	fs.StringVar(&o.admissionConfiguration, "admission-webhook-configuration", "", "with --admission-webhook-bind-address: the ValidatingWebhookConfiguration whose caBundle the controller fills (it never creates or deletes it)")
	fs.Var(&o.admissionHosts, "admission-webhook-hosts", "with --admission-webhook-bind-address: comma-separated DNS names and IP addresses of the webhook's serving certificate (its Service's)")
	fs.StringVar(&o.routedIPJobNamespace, "routed-ip-job-namespace", "", "seed namespace where ClusterRoutedIPClass Jobs run and their fromSecretsRef Secrets live (default: the controller's own namespace; none: routed IPs are off)")
}

func (o *options) validate() error {
	if err := validateMetrics(*o); err != nil {
		return err
	}
	if err := validateAdmission(*o); err != nil {
		return err
	}
	if o.leaderElect && o.renewDeadline >= o.leaseDuration {
		return fmt.Errorf("--leader-elect-renew-deadline (%s) must be shorter than --leader-elect-lease-duration (%s)", o.renewDeadline, o.leaseDuration)
	}
	if o.dnsVerifyQPS <= 0 || o.dnsVerifyInterval <= 0 {
		return fmt.Errorf("--dns-verify-qps and --dns-verify-interval must be positive")
	}
	for _, s := range o.dnsVerifyServers {
		if _, _, err := net.SplitHostPort(s); err != nil {
			return fmt.Errorf("--dns-verify-servers: %q is not host:port", s)
		}
	}
	if o.canaryInterval < 0 || o.canaryQPS <= 0 {
		return fmt.Errorf("--canary-interval must not be negative and --canary-qps must be positive")
	}
	if o.canaryProxy != "" {
		u, err := url.Parse(o.canaryProxy)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "socks5") {
			return fmt.Errorf("--canary-proxy: %q is not an http:// or socks5:// URL", o.canaryProxy)
		}
	}
	if _, err := canary.DefaultRefused().WithCIDRs(o.canaryRefuseCIDRs); err != nil {
		return fmt.Errorf("--canary-refuse-cidrs: %w", err)
	}
	if _, err := canary.DefaultRefused().WithAllowed(o.canaryAllowCIDRs); err != nil {
		return fmt.Errorf("--canary-allow-cidrs: %w", err)
	}
	if _, err := canary.ParsePortRange(o.canaryNodePorts); err != nil {
		return fmt.Errorf("--canary-node-port-range: %w", err)
	}
	if o.shareClusters {
		if o.leaderElect {
			return fmt.Errorf("--sharding and --leader-elect exclude each other: sharing replicas all work")
		}
		if o.replicaLease < 3*time.Second {
			return fmt.Errorf("--sharding-lease-duration must be at least 3s")
		}
		if o.replicaID == "" {
			o.replicaID = os.Getenv("POD_NAME")
		}
		if o.replicaID == "" {
			h, err := os.Hostname()
			if err != nil {
				return fmt.Errorf("--replica-id: %w", err)
			}
			o.replicaID = h
		}
		if errs := validation.IsDNS1123Subdomain("shardgate-replica-" + o.replicaID); len(errs) > 0 {
			return fmt.Errorf("--replica-id %q: %s", o.replicaID, strings.Join(errs, "; "))
		}
	}
	if o.driftInterval < time.Second {
		return fmt.Errorf("--drift-check-interval must be at least 1s")
	}
	if o.maxObjects < 1 || o.maxObjectBytes < 1<<10 || o.maxKindBytes < 1<<10 {
		return fmt.Errorf("--max-objects-per-kind must be at least 1, --max-object-bytes and --max-bytes-per-kind at least 1024")
	}
	if o.seedQPS <= 0 || o.seedBurst < 1 {
		return fmt.Errorf("--kube-api-qps and --kube-api-burst must be positive")
	}
	if o.dnsShares < 1 || o.dnsShares > 64 {
		return fmt.Errorf("--dns-shares must be from 1 to 64, not %d", o.dnsShares)
	}
	if o.concurrency < 1 || o.dnsConcurrency < 1 {
		return fmt.Errorf("--concurrency and --dns-concurrency must be at least 1")
	}
	if len(o.secretNamespaces) == 0 {
		if ns := ownNamespace(); ns != "" {
			o.secretNamespaces = stringList{ns}
		}
	}
	if o.routedIPJobNamespace == "" {
		o.routedIPJobNamespace = ownNamespace()
	}
	if o.certificateNamespace == "" {
		o.certificateNamespace = ownNamespace()
	}
	if o.acmeOrdersPerWeek < 1 {
		return fmt.Errorf("--acme-orders-per-week must be at least 1")
	}
	if len(o.servedZones) == 0 && o.dnsZone != "" {
		o.servedZones = stringList{o.dnsZone}
	}
	return nil
}

// ownNamespace is the namespace the controller runs in: $POD_NAMESPACE (the chart sets it), else
// the service account's namespace file; "" outside a cluster.
func ownNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
