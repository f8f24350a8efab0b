// Command shardgate-vip-agent feeds keepalived for a VIP shard's router pod (see pkg/vip/agent):
// `shardgate-vip-agent [flags]` is the agent (the pod's vip-agent container: the API token, no
// capability); `shardgate-vip-agent keepalived [flags]` runs keepalived as the agent says (the
// keepalived container: NET_ADMIN and NET_RAW, no token). Each writes a directory of its own, which
// the other reads. `shardgate-vip-agent load [flags]` is a router pod's load reporter (see
// pkg/routerload), on any shard that reports load.
package main

import (
	"context"
	"flag"
	"log"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/shardgate/shardgate/pkg/routerload"
	"github.com/shardgate/shardgate/pkg/vip/agent"
)

func main() {
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if len(os.Args) > 1 && os.Args[1] == "keepalived" {
		superviseKeepalived(ctx, os.Args[2:])
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "load" {
		reportLoad(ctx, os.Args[2:])
		return
	}
	runAgent(ctx)
}

// superviseKeepalived runs keepalived in its container.
func superviseKeepalived(ctx context.Context, args []string) {
	fl := flag.NewFlagSet("keepalived", flag.ExitOnError)
	var k agent.Keepalived
	var nodeIP string
	fl.StringVar(&k.Binary, "keepalived", "/usr/sbin/keepalived", "keepalived binary")
	fl.StringVar(&k.NodeName, "node-name", "", "this node's name (keepalived's config id)")
	fl.StringVar(&nodeIP, "node-ip", "", "this node's address (VRRP source)")
	fl.StringVar(&k.RunDir, "run-dir", "/run/keepalived-supervisor", "keepalived's directory (the agent reads it)")
	fl.StringVar(&k.AgentDir, "agent-dir", "/run/keepalived", "the agent's directory (read only)")
	fl.DurationVar(&k.Poll, "poll", 200*time.Millisecond, "how often the agent's configuration is read")
	_ = fl.Parse(args)
	addr, err := netip.ParseAddr(nodeIP)
	if err != nil || k.NodeName == "" {
		log.Fatalf("--node-name and --node-ip are required")
	}
	k.NodeIP = addr
	if err := k.Supervise(ctx); err != nil {
		log.Fatal(err)
	}
}

func runAgent(ctx context.Context) {
	var o agent.Options
	var nodeIP string
	var files agent.Files
	configMap := flag.String("configmap", "", "the ConfigMap Shardgate renders the configuration into, read through the API "+
		"(in a pod); without it, --config and --vips")
	flag.StringVar(&files.Config, "config", "", "file with the configuration rendered by Shardgate (outside a pod)")
	flag.StringVar(&files.VIPs, "vips", "", "file with the VIP list rendered by Shardgate (outside a pod; optional)")
	flag.StringVar(&o.NodeName, "node-name", "", "this node's name (keepalived's config id)")
	flag.StringVar(&nodeIP, "node-ip", "", "this node's address (VRRP source)")
	flag.StringVar(&o.AgentDir, "agent-dir", "/run/keepalived", "the agent's directory (keepalived reads it)")
	flag.StringVar(&o.KeepalivedDir, "run-dir", "/run/keepalived-supervisor", "keepalived's directory (read only)")
	flag.StringVar(&o.RouterURL, "router-url", "", "answers 200 while the local router serves "+
		"(its flavour's readiness, which Shardgate renders; required)")
	flag.DurationVar(&o.ProbeInterval, "probe-interval", 200*time.Millisecond, "router probe interval and timeout")
	// From the environment too: Shardgate renders it as ROUTER_SETTLE, which an older agent image
	// ignores where an unknown flag would stop it.
	settle, _ := time.ParseDuration(os.Getenv("ROUTER_SETTLE"))
	flag.DurationVar(&o.RouterSettle, "router-settle", settle, "how long the router must answer without a miss "+
		"before it counts as serving (default: $ROUTER_SETTLE, else 0)")
	flag.DurationVar(&o.ReloadCheck, "reload-check", time.Second, "how often the configuration is compared")
	shard := flag.String("shard", "", "the shard (names the nodes' report Leases)")
	namespace := flag.String("namespace", "shardgate-system", "namespace of the ConfigMap and the report Leases")
	flag.Parse()
	addr, err := netip.ParseAddr(nodeIP)
	if err != nil || o.NodeName == "" || o.RouterURL == "" {
		log.Fatalf("--node-name, --node-ip and --router-url are required")
	}
	o.NodeIP = addr
	o.Source = files
	// In a pod, read the configuration through the API and report through Leases (the
	// ServiceAccount may read the ConfigMap and write Leases in its namespace only).
	if os.Getenv("KUBERNETES_SERVICE_HOST") != "" && *shard != "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			log.Fatalf("in-cluster config: %v", err)
		}
		if *configMap != "" {
			// No client timeout: it would end every watch after it; the source bounds its own.
			cm := &agent.ConfigMap{NewClient: newClient(cfg, 0), Namespace: *namespace, Name: *configMap}
			go cm.Run(ctx)
			o.Source = cm
		}
		o.Reporter = &agent.Reporter{NewClient: newClient(cfg, 5*time.Second), Namespace: *namespace, Shard: *shard, Node: o.NodeName}
	}
	if o.Source == files && files.Config == "" {
		log.Fatalf("--configmap (in a pod) or --config is required")
	}
	if err := agent.Run(ctx, o); err != nil {
		log.Fatal(err)
	}
}

// reportLoad runs a router pod's load reporter.
func reportLoad(ctx context.Context, args []string) {
	fl := flag.NewFlagSet("load", flag.ExitOnError)
	r := routerload.Reporter{HTTP: &http.Client{}}
	var format, uid string
	fl.StringVar(&r.Shard, "shard", "", "the shard (names the report Lease)")
	fl.StringVar(&r.Namespace, "namespace", "shardgate-system", "namespace of the report Lease")
	fl.StringVar(&r.Pod, "pod-name", "", "this router pod's name (the Lease's holder and owner)")
	fl.StringVar(&uid, "pod-uid", "", "this router pod's UID (the Lease's owner)")
	fl.StringVar(&r.MetricsURL, "metrics-url", "", "the router's metrics on the pod's loopback (required)")
	fl.StringVar(&format, "format", string(routerload.FormatTraefik), "the metrics' format")
	fl.StringVar(&r.AdminEntryPoint, "admin-entrypoint", "traefik", "the router's admin entry point, left out of the figures")
	fl.DurationVar(&r.Interval, "interval", 5*time.Second, "how often the metrics are read")
	fl.DurationVar(&r.Window, "window", 30*time.Second, "the window the rates are averaged over")
	fl.DurationVar(&r.Renew, "renew", 10*time.Second, "how often the Lease is renewed")
	leaseSeconds := fl.Int("lease-seconds", 30, "how long a report stays fresh")
	_ = fl.Parse(args)
	if r.Shard == "" || r.Pod == "" || uid == "" || r.MetricsURL == "" {
		log.Fatalf("--shard, --pod-name, --pod-uid and --metrics-url are required")
	}
	r.Format, r.PodUID, r.LeaseSeconds = routerload.Format(format), types.UID(uid), int32(*leaseSeconds)
	r.HTTP.Timeout = r.Interval
	cfg, err := rest.InClusterConfig()
	if err != nil {
		log.Fatalf("in-cluster config: %v", err)
	}
	r.NewClient = newClient(cfg, 5*time.Second)
	r.Run(ctx)
}

// newClient builds API clients with a transport of their own each time, so a new client is a new
// connection (client-go shares cached transports unless the config has its own dialer).
func newClient(cfg *rest.Config, timeout time.Duration) func() (kubernetes.Interface, error) {
	return func() (kubernetes.Interface, error) {
		c := rest.CopyConfig(cfg)
		c.Timeout = timeout
		c.Dial = (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 15 * time.Second}).DialContext
		hc, err := rest.HTTPClientFor(c)
		if err != nil {
			return nil, err
		}
		return kubernetes.NewForConfigAndClient(c, hc)
	}
}
