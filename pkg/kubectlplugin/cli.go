package kubectlplugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusterview"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

const usage = `kubectl shardgate: where routes go and whether their names resolve.

Against a user cluster:
  kubectl shardgate status                     the cluster domain, its shards and CNAME targets
  kubectl shardgate explain ingress/NAME [-n NS] the Ingress's shard, final hosts and their DNS
                                               answers, or why Shardgate rejected it
  kubectl shardgate explain httproute/NAME [-n NS]
                                               the same for an HTTPRoute (Gateway API)
Against the seed:
  kubectl shardgate clusters [--problems] [--search S] [--page N]
                                               every user cluster: domain, readiness, DNS,
                                               shards, targets, routes
  kubectl shardgate doctor [NAMESPACE/NAME | NAME -n NS] [--dns-server S]
                                               what is wrong with a cluster (or every cluster
                                               with a problem), causes first, each with the
                                               next step and its runbook; a named cluster's
                                               shard names are also looked up in DNS

Flags:
`

// Run is the plugin's main: args without the program name; it returns the exit error. kinds are
// the route kinds explain knows, the first one's routes named by NAME alone.
func Run(ctx context.Context, kinds routekinds.Registry, args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("kubectl-shardgate", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		kubeconfig, kubeContext, namespace, output, dnsServer, search string
		problems                                                      bool
		page                                                          int
	)
	fs.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	fs.StringVar(&kubeContext, "context", "", "kubeconfig context")
	fs.StringVarP(&namespace, "namespace", "n", "", "namespace of the route (default: the context's)")
	fs.StringVarP(&output, "output", "o", "", "json or yaml (default: a table for people)")
	fs.StringVar(&dnsServer, "dns-server", "", "host:port of the DNS server explain asks (default: this machine's resolver)")
	fs.BoolVar(&problems, "problems", false, "clusters: only those that are not Ready")
	fs.StringVar(&search, "search", "", "clusters: only those whose namespace, name, cluster ID, domain or profile contains it")
	fs.IntVar(&page, "page", 1, "clusters: the page to show (500 clusters a page)")
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return err
	}
	if output != OutputHuman && output != OutputJSON && output != OutputYAML {
		return fmt.Errorf("-o %s: json or yaml", output)
	}
	rest := fs.Args()
	if len(rest) == 0 {
		fs.Usage()
		return errors.New("a command is required: status, explain, clusters or doctor")
	}
	c, ns, err := connect(kubeconfig, kubeContext, kinds)
	if err != nil {
		return err
	}
	if namespace == "" {
		namespace = ns
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	switch rest[0] {
	case "status":
		s, err := clusterStatus(ctx, c)
		if err != nil {
			return err
		}
		return write(stdout, output, s, func(w io.Writer) { printStatus(w, s) })
	case "explain":
		if len(rest) != 2 {
			return errors.New("usage: kubectl shardgate explain ingress/NAME")
		}
		k, name, err := routeName(kinds, rest[1])
		if err != nil {
			return err
		}
		route := k.New()
		if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, route); err != nil {
			return err
		}
		// Without the ConfigMap the explanation still stands; only which hosts Shardgate
		// publishes is then taken from the route's own CNAME target.
		s, _ := clusterStatus(ctx, c)
		e := Explain(k, route, s.Domains(), resolver(ctx, dnsServer))
		return write(stdout, output, e, func(w io.Writer) { printExplanation(w, k.Name(), e) })
	case "clusters":
		var list v1alpha1.ClusterIngressList
		if err := c.List(ctx, &list); err != nil {
			return fmt.Errorf("listing ClusterIngresses (is this the seed?): %w", err)
		}
		all := make([]clusterview.Cluster, 0, len(list.Items))
		for i := range list.Items {
			all = append(all, clusterview.FromClusterIngress(&list.Items[i]))
		}
		p := clusterview.Select(all, clusterview.Query{Search: search, Problems: problems, Page: page, Size: clusterview.MaxPageSize})
		return write(stdout, output, p, func(w io.Writer) { printClusters(w, p) })
	case "doctor":
		ds, err := doctor(ctx, c, rest[1:], namespace, resolver(ctx, dnsServer))
		if err != nil {
			return err
		}
		return write(stdout, output, ds, func(w io.Writer) { printDiagnoses(w, ds) })
	}
	return fmt.Errorf("unknown command %q: status, explain, clusters or doctor", rest[0])
}

// clusterStatus reads kube-public/shardgate-ingress.
func clusterStatus(ctx context.Context, c client.Client) (Status, error) {
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: names.UserInfoNamespace, Name: names.UserInfoName}, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return Status{}, fmt.Errorf("no %s/%s ConfigMap: Shardgate does not serve this cluster (yet)", names.UserInfoNamespace, names.UserInfoName)
		}
		return Status{}, err
	}
	return StatusFrom(cm), nil
}

// routeName accepts KIND/NAME, KIND being a route kind's name, resource or short name, either
// qualified by its API group, in any case (ingress/web, ing/web, ingresses.networking.k8s.io/web);
// or NAME alone, of the first kind.
func routeName(kinds routekinds.Registry, arg string) (routekinds.Kind, string, error) {
	if len(kinds) == 0 {
		return nil, "", errors.New("no route kinds")
	}
	kind, name, found := strings.Cut(arg, "/")
	if !found {
		return kinds[0], arg, nil
	}
	if k := kinds.ByResource(kind); k != nil && name != "" {
		return k, name, nil
	}
	return nil, "", fmt.Errorf("%q: explain takes %s/NAME", arg, strings.ToLower(kinds[0].Name()))
}

func connect(kubeconfig, kubeContext string, kinds routekinds.Registry) (client.Client, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", err
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, "", err
	}
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, "", err
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, "", err
	}
	if err := kinds.AddToScheme(s); err != nil {
		return nil, "", err
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	return c, ns, err
}

// resolver looks names up at server (host:port), or with the system's resolver.
func resolver(ctx context.Context, server string) Lookup {
	r := net.DefaultResolver
	if server != "" {
		r = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, server)
		}}
	}
	return func(name string) ([]string, error) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return r.LookupHost(ctx, name)
	}
}
