// Command seed-controller is Shardgate's controller. It runs in a seed cluster, engages every user
// cluster the seed manages, and keeps each one's ingress shards and wildcard DNS true.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/debug"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

func main() {
	if err := run(ctrl.SetupSignalHandler(), os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "seed-controller: %v\n", err)
		os.Exit(1)
	}
}

// run parses args, builds the manager and runs it until ctx ends.
func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("seed-controller", flag.ContinueOnError)
	var opts options
	opts.bind(fs)
	zapOpts := zap.Options{}
	zapOpts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if err := opts.validate(); err != nil {
		return err
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	if limit, ok := softMemoryLimit(os.Getenv); ok {
		debug.SetMemoryLimit(limit)
		ctrl.Log.WithName("setup").Info("soft memory limit", "bytes", limit)
	}

	cfg, err := seedConfig(opts.kubeconfig, opts.seedQPS, opts.seedBurst)
	if err != nil {
		return fmt.Errorf("seed cluster config: %w", err)
	}
	if opts.shareClusters {
		// Each replica's requests say who sent them (audit logs, API priority and fairness).
		cfg.UserAgent = "shardgate/" + opts.replicaID
	}
	mgr, err := newManager(cfg, opts)
	if err != nil {
		return err
	}
	ctrl.Log.WithName("setup").Info("starting", "dnsZone", opts.dnsZone, "leaderElection", opts.leaderElect)
	if !opts.metricsSecure && opts.metricsAddr != "0" {
		ctrl.Log.WithName("setup").Info("INSECURE: --metrics-secure=false serves /metrics, which name every user cluster, "+
			"over plain HTTP to anyone who reaches it", "address", opts.metricsAddr)
	}
	return mgr.Start(ctx)
}

// seedConfig is the seed cluster's client config: --kubeconfig when given, else the usual
// lookup (KUBECONFIG, in-cluster service account, ~/.kube/config).
func seedConfig(kubeconfig string, qps float64, burst int) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	} else {
		cfg, err = ctrl.GetConfig()
	}
	if err != nil {
		return nil, err
	}
	// client-go's default (5 QPS) throttles a profile change that touches many clusters' objects
	// to seconds, and 50 bounded a thousand clusters' first publication to minutes and 250
	// clusters' node changes at once to 7.5 s (BenchmarkSeedScale); the API server's own
	// priority and fairness protects it.
	cfg.QPS, cfg.Burst = float32(qps), burst
	return cfg, nil
}
