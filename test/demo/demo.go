package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/test/framework"
)

// demo is what start built.
type demo struct {
	s       *framework.Session
	env     *framework.Environment
	out     *screen
	header  string
	cluster []string // demo1, demo2, ...
	// With real nodes: HTTPS through cert-manager and Pebble, as the tests do, started beside
	// the clusters (tls delivers once); roots is Pebble's root once they are up.
	tlsOn  bool
	tls    <-chan tlsParts
	tlsErr error
	roots  *x509.CertPool
}

// tlsParts is what startTLS brought up: Pebble's root to verify the routers' certificates with.
type tlsParts struct {
	roots *x509.CertPool
	err   error
}

// certNamespace is where Shardgate keeps the clusters' Certificates in the demo's seed.
const certNamespace = "shardgate"

// The HAProxy shard runs on a node of its own; routerLabel says which flavour's routers a node takes.
const (
	routerLabel  = "demo.shardgate.io/router"
	haproxyNode  = "node-haproxy"
	haproxyShard = "haproxy"
)

// start brings everything up, printing progress; nil when a signal came first.
func start(ctx context.Context, s *framework.Session, o options, out *screen) *demo {
	kind := "real nodes (kubelet + containerd in network namespaces; Traefik routers run as pods)"
	if o.simulated {
		kind = "simulated nodes (kwok)"
	}
	if o.haproxy {
		kind += ", and a node for an HAProxy shard"
	}
	out.line("[demo] starting a seed and %d user cluster(s) with %d %s, BIND and external-dns", o.clusters, o.nodes, kind)
	opts := framework.EnvironmentOptions{UserClusters: o.clusters, DNS: true, SimulatedNodes: o.simulated}
	if !o.simulated {
		for range o.clusters {
			var nodes []framework.RealNodeSpec
			for j := 1; j <= o.nodes; j++ {
				nodes = append(nodes, framework.RealNodeSpec{Name: fmt.Sprintf("node-%d", j),
					Labels: map[string]string{routerLabel: string(v1alpha1.FlavourTraefik)}})
			}

			opts.RealNodes = append(opts.RealNodes, nodes)
		}
	}
	env := framework.StartEnvironment(s, opts)
	if ctx.Err() != nil {
		return nil
	}
	zone := env.DNS.Zone
	d := &demo{s: s, env: env, out: out}
	flags := []string{"--dns-zone=" + zone, "--dns-verify-servers=" + env.DNS.Addr, "--dns-verify-interval=10s"}
	if !o.simulated {
		out.line("[demo] starting Pebble (an ACME server) and cert-manager beside it: every cluster gets a wildcard certificate")
		must(s, env.Seed.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: certNamespace}}))
		d.tlsOn = true
		flags = append(flags, "--certificate-namespace="+certNamespace)
	}
	out.line("[demo] starting seed-controller --dns-zone=%s (DNS verified at BIND, status page on)", zone)
	ctl := framework.StartController(s, env.Seed, flags...)
	must(s, d.setUp(ctx, o))
	if ctx.Err() != nil {
		return nil
	}
	page, err := d.statusPage(ctx, ctl)
	must(s, err)
	if d.tlsOn {
		// Once the clusters are on their way: started earlier, they only slow the first 200.
		d.tls = d.startTLS(ctx)
	}
	if o.haproxy {
		// The same: their nodes join once the Traefik shards' routers are on their way.
		go d.startHAProxyNodes(ctx)
	}
	d.header, err = d.describe(o, page)
	must(s, err)
	return d
}

// setUp creates the profile, registers the clusters and gives each a sample app behind an
// Ingress.
func (d *demo) setUp(ctx context.Context, o options) error {
	seed := d.env.Seed
	shards := []v1alpha1.ShardSpec{{Name: v1alpha1.DefaultShardName, Replicas: ptr.To(int32(o.nodes)),
		Image: framework.TraefikImage, ImagePullPolicy: corev1.PullNever,
		NodeSelector: map[string]string{routerLabel: string(v1alpha1.FlavourTraefik)}}}
	if o.haproxy {
		shards = append(shards, haproxyShardSpec())
	}
	if o.simulated {
		shards = []v1alpha1.ShardSpec{{Name: v1alpha1.DefaultShardName, Publishing: v1alpha1.PublishNodePort}}
	}
	spec := v1alpha1.IngressProfileSpec{DNS: v1alpha1.DNSSettings{TTL: 10}, Shards: shards}
	if d.tlsOn {
		// The Issuer may not exist yet: cert-manager issues once startTLS made it. HTTP keeps
		// answering (no redirect): its first 200 comes before the certificate.
		spec.TLS = v1alpha1.TLSSettings{IssuerRef: &v1alpha1.IssuerReference{Name: "pebble", Kind: v1alpha1.KindIssuer}}
		// Gateway API: the clusters get its CRDs, and an HTTPRoute beside the Ingress (routeSummary).
		spec.GatewayAPI = v1alpha1.GatewayAPIEnabled
	}
	if err := seed.Client.Create(ctx, &v1alpha1.IngressProfile{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: spec}); err != nil {
		return err
	}
	for i, u := range d.env.Users {
		id := fmt.Sprintf("demo%d", i+1)
		d.cluster = append(d.cluster, id)
		kc, err := u.Kubeconfig("shardgate", "system:masters")
		if err != nil {
			return err
		}
		if err := seed.Client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: id, Labels: map[string]string{v1alpha1.KubeconfigSecretLabel: "true"}},
			Data:       map[string][]byte{"value": kc},
		}); err != nil {
			return err
		}
		if o.simulated {
			for j := 1; j <= o.nodes; j++ {
				if err := u.AddNode(ctx, framework.NodeSpec{Name: fmt.Sprintf("node-%d", j), InternalIP: fmt.Sprintf("127.0.%d.%d", 120+i, j)}); err != nil {
					return err
				}
			}
		} else if err := framework.DeployBackend(ctx, u, "default", "web", 2); err != nil {
			return err
		}
		if err := u.Client.Create(ctx, demoIngress("web", "app."+id+"."+d.env.DNS.Zone, names.IngressClassName)); err != nil {
			return err
		}
		if o.haproxy {
			host := haproxyHost(id + "." + d.env.DNS.Zone)
			if err := u.Client.Create(ctx, demoIngress("web-haproxy", host, render.ShardClass(haproxyShardSpec()))); err != nil {
				return err
			}
		}
	}
	return nil
}

// startHAProxyNodes gives every cluster its node for the HAProxy shard (host-network routers of
// two flavours cannot share a node's ports 80 and 443); until it is Ready, the shard's router
// waits for it, and its names resolve through the cluster's wildcard to a Traefik router.
func (d *demo) startHAProxyNodes(ctx context.Context) {
	var wg sync.WaitGroup
	for i, f := range d.env.Fabrics {
		if ctx.Err() == nil && f != nil {
			wg.Go(func() { d.startHAProxyNode(ctx, i, f) })
		}
	}
	wg.Wait()
}

func (d *demo) startHAProxyNode(ctx context.Context, i int, f *framework.Fabric) {
	defer func() {
		if r := recover(); r != nil { // a harness failure: the summary shows the shard without routers
			d.s.Logf("%s of %s: %v", haproxyNode, d.cluster[i], r)
		}
	}()
	if _, err := f.AddRealNode(ctx, d.env.Users[i], framework.RealNodeSpec{Name: haproxyNode,
		Labels: map[string]string{routerLabel: string(v1alpha1.FlavourHAProxy)}}); err != nil {
		d.s.Logf("%s of %s: %v", haproxyNode, d.cluster[i], err)
	}
}

// haproxyShardSpec is the demo's HAProxy shard: one router on node-haproxy, its routes under
// haproxy.<cluster domain>, chosen by its flavour's IngressClass.
func haproxyShardSpec() v1alpha1.ShardSpec {
	return v1alpha1.ShardSpec{Name: haproxyShard, Flavour: v1alpha1.FlavourHAProxy, Replicas: ptr.To[int32](1),
		Image: framework.HAProxyImage, ImagePullPolicy: corev1.PullNever,
		NodeSelector: map[string]string{routerLabel: string(v1alpha1.FlavourHAProxy)}}
}

func haproxyHost(clusterDomain string) string {
	return "app." + names.ShardDomain(haproxyShard, clusterDomain)
}

// statusPage gives the demo's operator a ServiceAccount that may read ClusterIngresses and puts
// a local proxy in front of the page that adds its token, as an operator's authenticating proxy
// would: a browser can open the returned URL.
func (d *demo) statusPage(ctx context.Context, ctl *framework.Controller) (string, error) {
	seed := d.env.Seed
	if err := seed.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "demo-admin"}}); err != nil {
		return "", err
	}
	if err := seed.Client.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "demo-admin"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view-clusteringresses"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "default", Name: "demo-admin"}}}); err != nil {
		return "", err
	}
	if err := seed.Client.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "view-clusteringresses"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"clusteringresses"}, Verbs: []string{"get", "list", "watch"}}}}); err != nil {
		return "", err
	}
	token, err := framework.ServiceAccountToken(seed, "default", "demo-admin")
	if err != nil {
		return "", err
	}
	target, _ := url.Parse("https://" + ctl.StatusAddr)
	proxy := &httputil.ReverseProxy{
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // the controller's self-signed certificate, on loopback
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Header.Set("Authorization", "Bearer "+token)
		},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	d.s.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String() + "/", nil
}

// describe writes the kubeconfigs and returns the header: where things are and what to try.
func (d *demo) describe(o options, page string) (string, error) {
	runDir, err := framework.RunDir()
	if err != nil {
		return "", err
	}
	kcDir := filepath.Join(runDir, "kubeconfigs")
	seedKC, err := d.env.Seed.WriteKubeconfig(filepath.Join(kcDir, "seed"), "demo-operator")
	if err != nil {
		return "", err
	}
	root, err := framework.RepoRoot()
	if err != nil {
		return "", err
	}
	rel := func(p string) string {
		if r, err := filepath.Rel(root, p); err == nil && !strings.HasPrefix(r, "..") {
			return r
		}
		return p
	}
	kubectl := "kubectl"
	if tools, err := framework.LocateTools("kubectl"); err == nil {
		kubectl = rel(tools.Path("kubectl"))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Shardgate demo: %d user cluster(s), zone %s, BIND at %s\n\n", len(d.cluster), d.env.DNS.Zone, d.env.DNS.Addr)
	fmt.Fprintf(&b, "  status page   %s   (JSON: %sapi/v1/clusters)\n", page, page)
	if d.tlsOn {
		fmt.Fprintf(&b, "  HTTPS         every cluster's names get a wildcard certificate from Pebble (ACME) through cert-manager\n")
	}
	if o.haproxy {
		fmt.Fprintf(&b, "  routers       Traefik (shard default) on node-1..%d; HAProxy (shard %s) on %s, "+
			"its names under %s.<cluster>\n", o.nodes, haproxyShard, haproxyNode, haproxyShard)
	}
	fmt.Fprintf(&b, "  seed          %s\n", rel(seedKC))
	var first string
	for i, u := range d.env.Users {
		kc, err := u.WriteKubeconfig(filepath.Join(kcDir, d.cluster[i]), "demo-owner")
		if err != nil {
			return "", err
		}
		if first == "" {
			first = rel(kc)
		}
		fmt.Fprintf(&b, "  %-13s %s\n", d.cluster[i], rel(kc))
	}
	fmt.Fprintf(&b, "\nTry:\n")
	fmt.Fprintf(&b, "  %s --kubeconfig %s get clusteringresses -A\n", kubectl, rel(seedKC))
	fmt.Fprintf(&b, "  bin/kubectl-shardgate --kubeconfig %s clusters\n", rel(seedKC))
	fmt.Fprintf(&b, "  bin/kubectl-shardgate --kubeconfig %s doctor default/%s --dns-server %s\n", rel(seedKC), d.cluster[0], d.env.DNS.Addr)
	fmt.Fprintf(&b, "  bin/kubectl-shardgate --kubeconfig %s status\n", first)
	fmt.Fprintf(&b, "  bin/kubectl-shardgate --kubeconfig %s explain ingress/web --dns-server %s\n", first, d.env.DNS.Addr)
	if d.tlsOn {
		fmt.Fprintf(&b, "  bin/kubectl-shardgate --kubeconfig %s explain httproute/web-route --dns-server %s\n", first, d.env.DNS.Addr)
	}
	if o.haproxy {
		fmt.Fprintf(&b, "  bin/kubectl-shardgate --kubeconfig %s explain ingress/web-haproxy --dns-server %s\n",
			first, d.env.DNS.Addr)
	}
	fmt.Fprintf(&b, "  dig @127.0.0.1 -p %d +short anything.%s.%s\n", d.env.DNS.Port, d.cluster[0], d.env.DNS.Zone)
	if o.interval > 0 && o.nodes >= 2 {
		fmt.Fprintf(&b, "\nEvery %d s node-2 of demo1 is cordoned or uncordoned: watch its DNS answer follow.\n", o.interval)
	}
	fmt.Fprintf(&b, "Ctrl-C stops everything.\n")
	return b.String(), nil
}

// loop redraws the summary until ctx ends, flipping node-2 of demo1 every interval.
func (d *demo) loop(ctx context.Context, o options) {
	var flip <-chan time.Time
	if o.interval > 0 && o.nodes >= 2 {
		t := time.NewTicker(time.Duration(o.interval) * time.Second)
		defer t.Stop()
		flip = t.C
	}
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	cordoned, last := false, ""
	for {
		summary := d.summary(ctx, o, cordoned)
		d.redraw(summary, last)
		last = summary
		select {
		case <-ctx.Done():
			return
		case <-flip:
			cordoned = !cordoned
			if err := d.env.Users[0].CordonNode(ctx, "node-2", cordoned); err != nil && ctx.Err() == nil {
				d.s.Logf("cordon: %v", err)
			}
		case <-tick.C:
		}
	}
}

// redraw repaints the screen in place on a terminal; elsewhere it prints only what changed.
func (d *demo) redraw(summary, last string) {
	if isTerminal(os.Stdout) {
		d.out.line("\x1b[H\x1b[2J%s\n%s", d.header, summary)
		return
	}
	if last == "" {
		d.out.line("%s", d.header)
	}
	if stripTime(summary) != stripTime(last) {
		d.out.line("%s", summary)
	}
}

func (d *demo) summary(ctx context.Context, o options, cordoned bool) string {
	list := &v1alpha1.ClusterIngressList{}
	if err := d.env.Seed.Client.List(ctx, list); err != nil {
		return "listing ClusterIngresses: " + err.Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s  %-7s %-22s %-6s %-10s %-12s %s\n", time.Now().Format("15:04:05"), "CLUSTER", "DOMAIN", "NODES", "READY", "DNS", "ANSWER AT BIND")
	for _, ci := range list.Items {
		ready, dnsState := "?", "?"
		if c := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionReady); c != nil {
			ready = c.Reason
		}
		if c := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionDNSPublished); c != nil {
			dnsState = c.Reason
			if len(ci.Status.DNSVerifiedBy) > 0 {
				dnsState += "✓"
			}
		}
		answer := "-"
		if ci.Status.Domain != "" {
			if a, err := d.env.DNS.Lookup(ctx, "anything."+ci.Status.Domain, dns.TypeA); err == nil {
				answer = strings.Join(a.Values, ",")
			}
		}
		fmt.Fprintf(&b, "          %-7s %-22s %-6d %-10s %-12s %s\n", ci.Name, ci.Status.Domain, ci.Status.ReadyNodeCount, ready, dnsState, answer)
		if !o.simulated && ci.Status.Domain != "" {
			i := clusterIndex(d.cluster, ci.Name)
			if i >= 0 && d.env.Fabrics[i] != nil {
				fmt.Fprintf(&b, "          %-7s Ingress   %s\n", "", d.fetch(ctx, d.env.Fabrics[i], "app."+ci.Status.Domain))
				if d.tlsOn {
					fmt.Fprintf(&b, "          %-7s Ingress   %s\n", "", d.httpsSummary(ctx, d.env.Fabrics[i], "app."+ci.Status.Domain))
					fmt.Fprintf(&b, "          %-7s HTTPRoute %s\n", "", d.routeSummary(ctx, i))
				}
				if o.haproxy {
					host := haproxyHost(ci.Status.Domain)
					fmt.Fprintf(&b, "          %-7s HAProxy   %s\n", "", d.fetch(ctx, d.env.Fabrics[i], host))
					if d.tlsOn {
						fmt.Fprintf(&b, "          %-7s HAProxy   %s\n", "", d.httpsSummary(ctx, d.env.Fabrics[i], host))
					}
				}
			}
		}
	}
	if cordoned {
		b.WriteString("          demo1/node-2 is cordoned\n")
	}
	return b.String()
}

// fetch resolves host at BIND and GETs it from the cluster's client namespace: the real path.
func (d *demo) fetch(ctx context.Context, f *framework.Fabric, host string) string {
	a, err := d.env.DNS.Lookup(ctx, host, dns.TypeA)
	if err != nil || len(a.Values) == 0 {
		return fmt.Sprintf("http://%s/ -> no address yet", host)
	}
	code, body, err := f.Get(ctx, a.Values[0]+":80", host)
	if err != nil {
		return fmt.Sprintf("http://%s/ via %s -> %v", host, a.Values[0], err)
	}
	body = strings.TrimSpace(body)
	if len(body) > 60 {
		body = body[:60]
	}
	return fmt.Sprintf("http://%s/ via %s -> %d %s", host, a.Values[0], code, body)
}

// startTLS brings up Pebble, cert-manager and the Issuer while the clusters come up, so the first
// HTTP 200 does not wait for them. A harness failure (a SessionFatal panic) is delivered
// as the error.
func (d *demo) startTLS(ctx context.Context) <-chan tlsParts {
	ch := make(chan tlsParts, 1)
	go func() {
		var p tlsParts
		defer func() {
			if r := recover(); r != nil {
				p.err = fmt.Errorf("%v", r)
			}
			ch <- p
		}()
		pebble := framework.StartPebble(d.s, d.env.DNS, framework.PebbleOptions{})
		certs := framework.StartCertManager(d.s, d.env.Seed, d.env.DNS)
		if p.err = certs.CreateACMEIssuer(ctx, d.env.Seed, pebble, d.env.DNS,
			framework.ACMEIssuer{Name: "pebble", Namespace: certNamespace, SkipSelfCheck: true}); p.err != nil {
			return
		}
		p.roots, p.err = pebble.Roots(ctx)
	}()
	return ch
}

// httpsSummary is fetchTLS once Pebble and cert-manager are up.
func (d *demo) httpsSummary(ctx context.Context, f *framework.Fabric, host string) string {
	select {
	case p := <-d.tls:
		d.roots, d.tlsErr = p.roots, p.err
	default:
	}
	switch {
	case d.tlsErr != nil:
		return "https: cert-manager and Pebble did not start: " + d.tlsErr.Error()
	case d.roots == nil:
		return fmt.Sprintf("https://%s/ -> waiting for cert-manager and Pebble", host)
	}
	return d.fetchTLS(ctx, f, host)
}

// routeSummary creates the cluster's HTTPRoute once Shardgate has installed Gateway API there,
// and fetches the default host allocation gave it.
func (d *demo) routeSummary(ctx context.Context, i int) string {
	u := d.env.Users[i]
	r := &gatewayv1.HTTPRoute{}
	err := u.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web-route"}, r)
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		if err := u.Client.Create(ctx, demoHTTPRoute()); err != nil {
			return "web-route: waiting for Gateway API in the cluster"
		}
		return "web-route: created, waiting for its allocation"
	}
	if err != nil {
		return "web-route: " + err.Error()
	}
	if len(r.Spec.Hostnames) == 0 {
		return "web-route: waiting for its allocation (" + r.Annotations[v1alpha1.AllocationAnnotation] + ")"
	}
	return d.fetch(ctx, d.env.Fabrics[i], string(r.Spec.Hostnames[0]))
}

// fetchTLS is fetch over HTTPS, the certificate verified against Pebble's root.
func (d *demo) fetchTLS(ctx context.Context, f *framework.Fabric, host string) string {
	a, err := d.env.DNS.Lookup(ctx, host, dns.TypeA)
	if err != nil || len(a.Values) == 0 {
		return fmt.Sprintf("https://%s/ -> no address yet", host)
	}
	code, _, leaf, err := f.GetTLS(ctx, a.Values[0]+":443", host, d.roots)
	if err != nil {
		return fmt.Sprintf("https://%s/ via %s -> not yet: %s", host, a.Values[0], shortTLSError(err))
	}
	name := leaf.Subject.CommonName
	if len(leaf.DNSNames) > 0 {
		name = leaf.DNSNames[0] // ACME certificates name their hosts here
	}
	return fmt.Sprintf("https://%s/ via %s -> %d, certificate %s issued by %s", host, a.Values[0], code,
		name, leaf.Issuer.CommonName)
}

// shortTLSError says why HTTPS is not there yet in a few words: before issuance the routers
// serve a certificate Pebble's root does not vouch for.
func shortTLSError(err error) string {
	var unknown x509.UnknownAuthorityError
	if errors.As(err, &unknown) {
		return "the certificate is being issued"
	}
	s := err.Error()
	if len(s) > 60 {
		s = s[:60]
	}
	return s
}

func clusterIndex(ids []string, name string) int {
	for i, id := range ids {
		if id == name {
			return i
		}
	}
	return -1
}

func stripTime(s string) string {
	if len(s) > 8 {
		return s[8:]
	}
	return s
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func must(s *framework.Session, err error) {
	if err != nil {
		s.Fatal(err)
	}
}

// demoHTTPRoute is a hostless HTTPRoute to the sample app, attached to the one parent Gateway
// tenants use: Shardgate names it and picks its shard.
func demoHTTPRoute() *gatewayv1.HTTPRoute {
	return &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-route"},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{
				Namespace: ptr.To(gatewayv1.Namespace(names.Namespace)), Name: names.ParentGatewayName}}},
			Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
				BackendObjectReference: gatewayv1.BackendObjectReference{Name: "web", Port: ptr.To(gatewayv1.PortNumber(80))}}}}}},
		}}
}

func demoIngress(name, host, class string) *networkingv1.Ingress {
	pt := networkingv1.PathTypePrefix
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: networkingv1.IngressSpec{IngressClassName: ptr.To(class), Rules: []networkingv1.IngressRule{{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{
			HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &pt,
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}},
	}
}
