package main

import (
	"flag"
	"fmt"
	"time"
)

// options are the controller's command-line settings.
type options struct {
	kubeconfig              string
	metricsAddr             string
	healthAddr              string
	pprofAddr               string
	leaderElect             bool
	leaderElectionNamespace string
	leaderElectionID        string
	leaseDuration           time.Duration
	renewDeadline           time.Duration
	retryPeriod             time.Duration
	dnsZone                 string
}

func (o *options) bind(fs *flag.FlagSet) {
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the seed cluster (default: in-cluster or $KUBECONFIG)")
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint (\"0\" disables it)")
	fs.StringVar(&o.healthAddr, "health-probe-bind-address", ":8081", "address of the /healthz and /readyz endpoints")
	fs.StringVar(&o.pprofAddr, "pprof-bind-address", "", "address of Go's /debug/pprof endpoints, for profiling (default: off)")
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "elect a leader so that only one replica reconciles")
	fs.StringVar(&o.leaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader-election Lease (default: the pod's namespace)")
	fs.StringVar(&o.leaderElectionID, "leader-election-id", "shardgate-seed-controller", "name of the leader-election Lease")
	fs.DurationVar(&o.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long a non-leader waits before it takes over")
	fs.DurationVar(&o.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader retries renewing before it gives up")
	fs.DurationVar(&o.retryPeriod, "leader-elect-retry-period", 2*time.Second, "how often leader-election clients retry")
	fs.StringVar(&o.dnsZone, "dns-zone", "", "default DNS zone for user-cluster domains (<clusterid>.<zone>); IngressProfiles may override it")
}

func (o *options) validate() error {
	if o.leaderElect && o.renewDeadline >= o.leaseDuration {
		return fmt.Errorf("--leader-elect-renew-deadline (%s) must be shorter than --leader-elect-lease-duration (%s)", o.renewDeadline, o.leaseDuration)
	}
	return nil
}
