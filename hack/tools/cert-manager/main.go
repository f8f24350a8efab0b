// Command cert-manager-controller runs cert-manager's own controllers for the tests: certificates,
// certificate requests (approver; ACME, CA and self-signed issuers), issuers, cluster issuers, and
// ACME orders and challenges. cert-manager's module on the proxy has no cmd/, so this is a small
// main of our own over its public pkg/controller registry. Left out: the webhook (the tests
// install the CRDs without conversion or defaulting webhooks and write valid objects), the
// cainjector, the ingress and gateway shims, Vault and Venafi, leader election and the metrics
// server.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/cert-manager/cert-manager/pkg/controller"
	_ "github.com/cert-manager/cert-manager/pkg/controller/acmechallenges"
	_ "github.com/cert-manager/cert-manager/pkg/controller/acmeorders"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/acme"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/acme"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

// enabled are the controllers this binary runs (cert-manager's default set without the shims,
// Vault, Venafi and metrics).
// workers per controller: cert-manager's default (--concurrent-workers 5). A DNS-01 self check
// holds a challenge worker for the 60 s it waits after seeing the record.
const workers = 5

var enabled = []string{
	"issuers", "clusterissuers", "orders", "challenges",
	"certificaterequests-approver", "certificaterequests-issuer-acme",
	"certificaterequests-issuer-ca", "certificaterequests-issuer-selfsigned",
	"certificates-trigger", "certificates-issuing", "certificates-key-manager",
	"certificates-request-manager", "certificates-readiness", "certificates-revision-manager",
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster cert-manager runs against")
	clusterNS := flag.String("cluster-resource-namespace", "kube-system", "namespace of ClusterIssuer secrets")
	nameservers := flag.String("dns01-recursive-nameservers", "", "host:port list (comma separated) for DNS-01 self checks")
	retry := flag.Duration("dns01-check-retry-period", 10*time.Second, "wait between DNS-01 self checks")
	version := flag.Bool("version", false, "print the version and exit")
	flag.Parse()
	if *version {
		fmt.Println("cert-manager controllers (shardgate test build)")
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *kubeconfig, *clusterNS, *nameservers, *retry); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, clusterNS, nameservers string, retry time.Duration) error {
	var ns []string
	if nameservers != "" {
		ns = strings.Split(nameservers, ",")
	}
	opts := controller.ContextOptions{
		Kubeconfig: kubeconfig, KubernetesAPIQPS: 50, KubernetesAPIBurst: 100,
		IssuerOptions: controller.IssuerOptions{ClusterResourceNamespace: clusterNS},
		ACMEOptions: controller.ACMEOptions{
			HTTP01SolverResourceRequestCPU: resource.MustParse("10m"), HTTP01SolverResourceRequestMemory: resource.MustParse("64Mi"),
			HTTP01SolverResourceLimitsCPU: resource.MustParse("100m"), HTTP01SolverResourceLimitsMemory: resource.MustParse("64Mi"),
			DNS01Nameservers: ns, DNS01CheckRetryPeriod: retry,
			// Self checks ask the given nameservers only: the test zone's NS records do not
			// name a server on port 53.
			DNS01CheckAuthoritative: len(ns) == 0,
		},
		SchedulerOptions: controller.SchedulerOptions{MaxConcurrentChallenges: 60},
		CertificateOptions: controller.CertificateOptions{
			CertificateRequestMinimumBackoffDuration: time.Hour, CertificateRequestMaximumBackoffDuration: 32 * time.Hour,
		},
	}
	factory, err := controller.NewContextFactory(ctx, opts)
	if err != nil {
		return err
	}
	base, err := factory.Build()
	if err != nil {
		return err
	}
	g, ctx := errgroup.WithContext(ctx)
	known := controller.Known()
	for _, name := range enabled {
		ctor, ok := known[name]
		if !ok {
			return fmt.Errorf("controller %s is not registered", name)
		}
		c, err := ctor(factory)
		if err != nil {
			return fmt.Errorf("controller %s: %w", name, err)
		}
		g.Go(func() error { return c.Run(workers, ctx) })
	}
	base.SharedInformerFactory.Start(ctx.Done())
	base.KubeSharedInformerFactory.Start(ctx.Done())
	base.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())
	fmt.Fprintf(os.Stderr, "cert-manager controllers started: %s\n", strings.Join(enabled, ", "))
	return g.Wait()
}
