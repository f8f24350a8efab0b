// Command shardgate-vip-agent runs keepalived for a VIP shard's router pod (see pkg/vip/agent).
package main

import (
	"context"
	"flag"
	"log"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/shardgate/shardgate/pkg/vip/agent"
)

func main() {
	var o agent.Options
	var nodeIP string
	flag.StringVar(&o.Keepalived, "keepalived", "/usr/sbin/keepalived", "keepalived binary")
	flag.StringVar(&o.Config, "config", "/etc/shardgate/keepalived/keepalived.conf", "configuration rendered by Shardgate")
	flag.StringVar(&o.NodeName, "node-name", "", "this node's name (keepalived's config id)")
	flag.StringVar(&nodeIP, "node-ip", "", "this node's address (VRRP source)")
	flag.StringVar(&o.HealthFile, "health-file", "/run/keepalived/router-health", "file keepalived tracks")
	flag.StringVar(&o.RunDir, "run-dir", "/run/keepalived", "keepalived's entry configuration and pid files")
	flag.StringVar(&o.RouterURL, "router-url", "http://127.0.0.1:9000/ping", "answers 200 while the local router serves")
	flag.DurationVar(&o.ProbeInterval, "probe-interval", 200*time.Millisecond, "router probe interval and timeout")
	flag.DurationVar(&o.ReloadCheck, "reload-check", time.Second, "how often the configuration is compared")
	flag.StringVar(&o.VIPs, "vips", "/etc/shardgate/vip/vips", "the VIP list rendered by Shardgate")
	shard := flag.String("shard", "", "the shard (names the holder Leases)")
	namespace := flag.String("namespace", "shardgate-system", "namespace of the holder Leases")
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	addr, err := netip.ParseAddr(nodeIP)
	if err != nil || o.NodeName == "" {
		log.Fatalf("--node-name and --node-ip are required")
	}
	o.NodeIP = addr
	// In a pod, report held VIPs through Leases (the ServiceAccount may write them there only).
	if os.Getenv("KUBERNETES_SERVICE_HOST") != "" && *shard != "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			log.Fatalf("in-cluster config: %v", err)
		}
		cfg.Timeout = 5 * time.Second
		newClient := func() (kubernetes.Interface, error) {
			// A transport of its own each time, so a new client is a new connection (client-go
			// shares cached transports unless the config has its own dialer).
			c := rest.CopyConfig(cfg)
			c.Dial = (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 15 * time.Second}).DialContext
			hc, err := rest.HTTPClientFor(c)
			if err != nil {
				return nil, err
			}
			return kubernetes.NewForConfigAndClient(c, hc)
		}
		o.Reporter = &agent.Reporter{NewClient: newClient, Namespace: *namespace, Shard: *shard, Node: o.NodeName}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := agent.Run(ctx, o); err != nil {
		log.Fatal(err)
	}
}
