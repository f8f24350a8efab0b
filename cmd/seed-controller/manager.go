package main

import (
	"context"
	"fmt"
	"net"
	"net/url"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	canarycheck "github.com/shardgate/shardgate/pkg/canary"
	"github.com/shardgate/shardgate/pkg/certs"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/clustermetrics"
	"github.com/shardgate/shardgate/pkg/controller/allocation"
	"github.com/shardgate/shardgate/pkg/controller/canary"
	"github.com/shardgate/shardgate/pkg/controller/certificates"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controller/claims"
	"github.com/shardgate/shardgate/pkg/controller/dns"
	"github.com/shardgate/shardgate/pkg/controller/engagement"
	"github.com/shardgate/shardgate/pkg/controller/identity"
	"github.com/shardgate/shardgate/pkg/controller/kit"
	"github.com/shardgate/shardgate/pkg/controller/lifecycle"
	"github.com/shardgate/shardgate/pkg/controller/load"
	"github.com/shardgate/shardgate/pkg/controller/profile"
	"github.com/shardgate/shardgate/pkg/controller/routedips"
	"github.com/shardgate/shardgate/pkg/controller/shards"
	"github.com/shardgate/shardgate/pkg/controller/vips"
	"github.com/shardgate/shardgate/pkg/dnsrecords"
	"github.com/shardgate/shardgate/pkg/replicas/gate"
	"github.com/shardgate/shardgate/pkg/routekinds"
	"github.com/shardgate/shardgate/pkg/sources"
	"github.com/shardgate/shardgate/pkg/statuspage"

	acmev1 "github.com/cert-manager/cert-manager/pkg/apis/acme/v1"
	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
)

func newScheme(providers sources.Registry) *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(v1alpha1.AddToScheme(s))
	utilruntime.Must(providers.AddToScheme(s))
	utilruntime.Must(dnsrecords.AddToScheme(s))
	utilruntime.Must(cmapi.AddToScheme(s))
	utilruntime.Must(acmev1.AddToScheme(s))
	return s
}

// sourceProviders are the kinds of cluster source, in the order a cluster's key is looked up in
// them (the first source found is the cluster's). A kind is added here, with its provider.
func sourceProviders(dc discovery.DiscoveryInterface, o options) sources.Registry {
	return sources.Registry{
		sources.NewClusterAPI(dc, ctrl.Log.WithName("cluster-api")),
		sources.NewKubermatic(dc, ctrl.Log.WithName("kubermatic")),
		sources.NewKubeconfigSecrets(o.secretNamespaces),
	}
}

// routeKinds are the kinds of route Shardgate allocates in user clusters, all planned together
// (a host has one owner whatever kind asks for it). A kind is added with its adapter
// (pkg/routekinds) to routekinds.Builtin, which kubectl-shardgate knows too.
func routeKinds() routekinds.Registry { return routekinds.Builtin() }

// newManager builds the controller manager with leader election, health and metrics endpoints.
func newManager(cfg *rest.Config, o options) (ctrl.Manager, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	providers := sourceProviders(dc, o)
	keeper, err := admissionKeeper(cfg, o)
	if err != nil {
		return nil, err
	}
	mgrOpts := ctrl.Options{
		Scheme: newScheme(providers),
		Cache: cache.Options{
			DefaultTransform: cache.TransformStripManagedFields(),
			// Only kubeconfig Secrets, only in the namespaces the operator listed: the seed's
			// other Secrets are none of Shardgate's business.
			ByObject: map[client.Object]cache.ByObject{
				&corev1.Secret{}: sources.KubeconfigSecretCache(o.secretNamespaces),
				// Only the routed-IP classes' Jobs, in the one namespace the Role grants them.
				&batchv1.Job{}: {Label: labels.SelectorFromSet(labels.Set{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue}), Namespaces: jobNamespaces(o)},
			},
		},
		Metrics:                 metricsOptions(o),
		HealthProbeBindAddress:  o.healthAddr,
		PprofBindAddress:        o.pprofAddr,
		LeaderElection:          o.leaderElect,
		LeaderElectionID:        o.leaderElectionID,
		LeaderElectionNamespace: o.leaderElectionNamespace,
		LeaseDuration:           &o.leaseDuration,
		RenewDeadline:           &o.renewDeadline,
		RetryPeriod:             &o.retryPeriod,
		// The leader steps down at once on shutdown, so a new replica takes over without waiting
		// for the lease to expire.
		LeaderElectionReleaseOnCancel: true,
		NewClient:                     newClient(o),
	}
	if keeper != nil {
		mgrOpts.WebhookServer = admissionServer(o, keeper)
	}
	mgr, err := ctrl.NewManager(cfg, mgrOpts)
	if err != nil {
		return nil, fmt.Errorf("manager: %w", err)
	}
	if err := addAdmission(mgr, o, keeper); err != nil {
		return nil, err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return nil, err
	}
	if err := addControllers(mgr, o, dc, providers); err != nil {
		return nil, err
	}
	if o.statusAddr != "0" && o.statusAddr != "" {
		clients, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		if err := mgr.Add(&statuspage.Server{BindAddress: o.statusAddr, CertDir: o.statusCertDir, Reader: mgr.GetCache(),
			Clients: clients, Log: ctrl.Log.WithName("status-page")}); err != nil {
			return nil, err
		}
	}
	return mgr, nil
}

// Leases, in a Role: leader election and, with --sharding, the replicas' Leases and the fences
// (the leader-election namespace); the routed-IP address claims (the Job namespace). The chart
// sets both to the release namespace and renders the Role there ("shardgate" is a placeholder).
// None is read through the cache, so nothing watches Leases cluster-wide. Events go where their
// objects are: any namespace.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete,namespace=shardgate
// +kubebuilder:rbac:groups="";events.k8s.io,resources=events,verbs=create;patch

// addControllers registers Shardgate's controllers and the discovery of the source providers'
// APIs. They share one Engager (one cache per user cluster, whatever the number of controllers
// reading it), one status Board and one kit.Config: the replica gate when several replicas share
// the seed. A controller is added here with one call, its package's Add with its Config.
func addControllers(mgr ctrl.Manager, o options, dc discovery.DiscoveryInterface, providers sources.Registry) error {
	access := clusteraccess.Options{Log: ctrl.Log.WithName("engager"), RouteKinds: routeKinds(), DriftInterval: o.driftInterval,
		Kubeconfig: clusteraccess.KubeconfigPolicy{AllowInsecure: o.allowInsecure},
		MaxObjects: o.maxObjects, MaxObjectBytes: o.maxObjectBytes, MaxKindBytes: o.maxKindBytes}
	if o.shareClusters {
		access.WrapWriter = gate.Writes // user-cluster writes check their fence too
	}
	engager, err := clusteraccess.NewEngager(access)
	if err != nil {
		return err
	}
	if err := mgr.Add(engager); err != nil { // disengages every cluster when the manager stops
		return err
	}
	// Every controller's part of ClusterIngress status, written by one writer (cistatus).
	board := cistatus.NewBoard(mgr.GetClient())
	board.Reader = mgr.GetAPIReader()
	if len(o.secretNamespaces) == 0 {
		ctrl.Log.WithName("setup").Info("no --kubeconfig-secret-namespaces and no namespace of its own: kubeconfig Secrets register no clusters")
	}
	var k kit.Config
	metricsOf := &clustermetrics.Collector{Reader: mgr.GetCache(), Log: ctrl.Log.WithName("cluster-metrics")}
	if o.shareClusters {
		owner, err := addReplicaGate(mgr, o, engager, board, lifecycle.ClusterKeys(mgr.GetCache(), providers))
		if err != nil {
			return err
		}
		k.Replicas = owner
		metricsOf.Owns = owner.Holds
	}
	if err := registerClusterMetrics(metricsOf); err != nil {
		return err
	}
	if err := lifecycle.Add(mgr, lifecycle.Config{Kit: k, DefaultZone: o.dnsZone, Sources: providers,
		RemovalGrace: o.removalGrace, Concurrency: o.concurrency, Board: board}); err != nil {
		return err
	}
	if err := engagement.Add(mgr, engagement.Config{Kit: k, Registry: engager, Sources: providers,
		KubeconfigResync: o.kubeconfigResync, Concurrency: o.concurrency}); err != nil {
		return err
	}
	for _, p := range providers {
		if d := p.Discovery(); d != nil {
			if err := mgr.Add(d); err != nil {
				return err
			}
		}
	}
	if err := identity.Add(mgr, identity.Config{Kit: k, ServedZones: o.servedZones, Concurrency: o.concurrency,
		Board: board}); err != nil {
		return err
	}
	var verifier *dns.Verifier
	if len(o.dnsVerifyServers) > 0 {
		verifier = dns.NewVerifier(o.dnsVerifyServers, o.dnsVerifyQPS, o.dnsVerifyInterval)
	}
	if err := dns.Add(mgr, dns.Config{Kit: k, Access: engager, ServedZones: o.servedZones, Concurrency: o.dnsConcurrency,
		Verifier: verifier, Board: board, DNSShares: o.dnsShares}); err != nil {
		return err
	}
	if err := shards.Add(mgr, shards.Config{Kit: k, Access: engager, Board: board, Concurrency: o.concurrency,
		Canary: o.canaryInterval > 0, CertificateNamespace: o.certificateNamespace}); err != nil {
		return err
	}
	// The status writer's applies take the seed API server's time the records need in a burst: a
	// quarter of the DNS controller's workers (a burst's status is held until its records are out).
	statusWorkers := max(2, o.dnsConcurrency/4)
	if err := cistatus.Add(mgr, cistatus.Config{Kit: k, Board: board, Concurrency: statusWorkers}); err != nil {
		return err
	}
	if o.canaryInterval > 0 {
		if err := canary.Add(mgr, canaryConfig(o, k, engager, verifier, board)); err != nil {
			return err
		}
	}
	if err := allocation.Add(mgr, allocation.Config{Kit: k, Access: engager, Board: board,
		Concurrency: o.concurrency}); err != nil {
		return err
	}
	if err := load.Add(mgr, load.Config{Kit: k, Access: engager, Board: board, Concurrency: o.concurrency}); err != nil {
		return err
	}
	certManager := certs.NewCertManagerAPI(dc, ctrl.Log.WithName("cert-manager"))
	if err := certificates.Add(mgr, certificates.Config{Kit: k, CertManager: certManager, Concurrency: o.concurrency,
		Namespace: o.certificateNamespace, OrdersPerWeek: o.acmeOrdersPerWeek, Board: board}); err != nil {
		return err
	}
	if err := vips.Add(mgr, vips.Config{Kit: k, Access: engager, Board: board}); err != nil {
		return err
	}
	if err := claims.Add(mgr, claims.Config{Kit: k, Access: engager, Board: board, Concurrency: o.concurrency,
		ReclaimGrace: o.claimReclaimGrace}); err != nil {
		return err
	}
	if o.routedIPJobNamespace == "" {
		ctrl.Log.WithName("setup").Info("no --routed-ip-job-namespace and no namespace of its own: routed IPs are off")
	} else if err := routedips.Add(mgr, routedips.Config{Kit: k, Access: engager, JobNamespace: o.routedIPJobNamespace,
		Board: board}); err != nil {
		return err
	}
	return profile.Add(mgr, profile.Config{Kit: k, DefaultZone: o.dnsZone})
}

// addReplicaGate adds this replica's membership to the manager and returns it: the gate every
// controller passes requests through (kit.Config.Replicas). This replica serves the clusters
// rendezvous hashing gives it, once it holds their fence. keys lists every cluster a controller
// may be asked for, sources without a ClusterIngress yet included: when owners change, each is
// announced to its new owner.
func addReplicaGate(mgr ctrl.Manager, o options, engager *clusteraccess.Engager, board *cistatus.Board,
	keys func(context.Context) ([]types.NamespacedName, error)) (*gate.Owner, error) {
	ns := o.leaderElectionNamespace
	if ns == "" {
		ns = ownNamespace()
	}
	if ns == "" {
		return nil, fmt.Errorf("--sharding needs a namespace for its Leases (--leader-election-namespace or the pod's)")
	}
	// The Leases' own client: its requests never wait behind the controllers' in a shared
	// client-side rate limiter (a renewal stuck there lets the Lease lapse under load).
	leaseCfg := rest.CopyConfig(mgr.GetConfig())
	leaseCfg.QPS, leaseCfg.Burst = 20, 40
	leases, err := client.New(leaseCfg, client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		return nil, err
	}
	// The fence checks before writes have a client of their own too: a burst of writes must
	// not delay renewals. Every write waits for its check, so the checks may send as many
	// requests as the writes (--kube-api-qps), or they would cap every write.
	checkCfg := rest.CopyConfig(mgr.GetConfig())
	checkCfg.QPS, checkCfg.Burst = max(mgr.GetConfig().QPS, 50), max(mgr.GetConfig().Burst, 100)
	checks, err := client.New(checkCfg, client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		return nil, err
	}
	// One L2 domain's VIP clusters are served by one replica: its planner sees all their nodes.
	groups := &gate.Groups{Of: vips.PlacementGroup}
	inf, err := mgr.GetCache().GetInformer(context.Background(), &v1alpha1.ClusterIngress{})
	if err != nil {
		return nil, err
	}
	if _, err := inf.AddEventHandler(groups.Handler()); err != nil {
		return nil, err
	}
	owner := &gate.Owner{Client: leases, Reader: leases, Checker: checks, Identity: o.replicaID, Namespace: ns,
		LeaseDuration: o.replicaLease, Renew: o.replicaLease / 5, Log: ctrl.Log.WithName("replicas"),
		Keys:      keys,
		Group:     groups.Get,
		OnRelease: func(key types.NamespacedName) { engager.Disengage(key); board.Forget(key); forgetClusterMetrics(key) },
		// What this replica posted before it lost the fence may be older than what another
		// replica wrote meanwhile: the next write starts from the API server's status.
		OnAcquire: board.Forget}
	return owner, mgr.Add(owner)
}

// newClient is the manager's client; with several replicas its writes check the fence of the
// reconcile they are made in (gate.Writes).
func newClient(o options) client.NewClientFunc {
	return func(cfg *rest.Config, opts client.Options) (client.Client, error) {
		c, err := client.New(cfg, opts)
		if err != nil || !o.shareClusters {
			return c, err
		}
		return gate.Writes(c), nil
	}
}

// canaryConfig: the canary resolves where DNS is verified when it is, else like any client.
func canaryConfig(o options, k kit.Config, access clusteraccess.Access, verifier *dns.Verifier,
	board *cistatus.Board) canary.Config {
	cfg := canary.Config{Kit: k, Access: access, Interval: o.canaryInterval, QPS: o.canaryQPS, Concurrency: o.concurrency,
		Board: board}
	cfg.Refused, _ = canarycheck.DefaultRefused().WithCIDRs(o.canaryRefuseCIDRs) // validated
	cfg.Refused, _ = cfg.Refused.WithAllowed(o.canaryAllowCIDRs)                 // validated
	cfg.NodePorts, _ = canarycheck.ParsePortRange(o.canaryNodePorts)             // validated
	if verifier != nil {
		cfg.Resolve = verifier.LookupA
	} else {
		cfg.Resolve = func(ctx context.Context, name string) ([]string, error) {
			ips, err := net.DefaultResolver.LookupIP(ctx, "ip4", name)
			out := make([]string, 0, len(ips))
			for _, ip := range ips {
				out = append(out, ip.String())
			}
			return out, err
		}
	}
	if o.canaryProxy != "" {
		cfg.Proxy, _ = url.Parse(o.canaryProxy) // validated
	}
	return cfg
}

// jobNamespaces: the routed-IP Job namespace, or a namespace no Job can be in when routed IPs are
// off (an empty map would mean every namespace).
func jobNamespaces(o options) map[string]cache.Config {
	ns := o.routedIPJobNamespace
	if ns == "" {
		ns = "shardgate-routed-ips-off"
	}
	return map[string]cache.Config{ns: {}}
}
