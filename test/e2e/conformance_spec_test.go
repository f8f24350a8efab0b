package e2e

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/test/framework"
)

// flavourImages are the router images the conformance suite runs, one per registered flavour: a
// flavour added without one fails the suite rather than going untested.
var flavourImages = map[v1alpha1.Flavour]string{v1alpha1.FlavourTraefik: framework.TraefikImage,
	v1alpha1.FlavourHAProxy: framework.HAProxyImage}

// ConformanceSpecInput is one flavour's user cluster: three real nodes, n1 and n2 of role a (the
// default shard, two routers), n3 of role b (shard b), on Fabric; the seed has BIND, external-dns,
// cert-manager with an ACME issuer (Pebble) and the controller.
type ConformanceSpecInput struct {
	Flavour render.Flavour
	Seed    *framework.ControlPlane
	User    *framework.ControlPlane
	DNS     *framework.DNSServer
	Roots   *x509.CertPool
	Fabric  *framework.Fabric
	Nodes   []*framework.RealNode
	// ClusterID is the user cluster's ID; Issuer the ACME issuer in the certificate namespace.
	ClusterID, Issuer string
}

// ConformanceSpec is what every router flavour must do on real pods (render.Flavour's contract):
// serve a shard's routes there and only there, and no route of another class; serve HTTPS with
// the cluster's certificate as the default and redirect plain HTTP; run as least privilege gives
// it; leave DNS while not ready; roll out without a failed request. VIP health (the agent asks the
// flavour's Readiness URL) is TestVIP's.
func ConformanceSpec(ctx context.Context, t *testing.T, inputGetter func() ConformanceSpecInput) {
	in := inputGetter()
	seed, u, f := in.Seed, in.User, in.Flavour
	domain := in.ClusterID + "." + in.DNS.Zone
	image, ok := flavourImages[f.Name()]
	if !ok {
		t.Fatalf("flavour %s has no router image in the conformance suite (flavourImages)", f.Name())
	}
	shard := func(name, role string, replicas int32) v1alpha1.ShardSpec {
		return v1alpha1.ShardSpec{Name: name, Flavour: f.Name(), Image: image, ImagePullPolicy: corev1.PullNever,
			Replicas: ptr.To(replicas), NodeSelector: map[string]string{"role": role}}
	}
	shards := []v1alpha1.ShardSpec{shard(v1alpha1.DefaultShardName, "a", 2), shard("b", "b", 1)}
	// Shard b's routers report their load; 2 requests/s per router is its capacity, so a client's
	// 10 requests/s saturate it.
	shards[1].Load = &v1alpha1.ShardLoadSpec{RequestsPerSecond: ptr.To[int32](2), ReporterImage: framework.KeepalivedImage}
	sel := map[string]string{"conformance": string(f.Name())}
	profile := "conformance-" + string(f.Name())
	p := &v1alpha1.IngressProfile{ObjectMeta: metav1.ObjectMeta{Name: profile}, Spec: v1alpha1.IngressProfileSpec{
		ClusterSelector: metav1.LabelSelector{MatchLabels: sel}, DNS: v1alpha1.DNSSettings{TTL: 5}, Shards: shards,
		TLS: v1alpha1.TLSSettings{IssuerRef: &v1alpha1.IssuerReference{Name: in.Issuer, Kind: v1alpha1.KindIssuer}, RedirectHTTP: true},
	}}
	must(t, seed.Client.Create(ctx, p))
	must(t, framework.DeployBackend(ctx, u, "default", "web", 1))
	class := f.IngressClass().Name
	route := func(name, host, class string) *networkingv1.Ingress {
		ing := shardIngress(name, host)
		ing.Spec.IngressClassName = ptr.To(class)
		return ing
	}
	appHost, bHost, otherHost := "app."+domain, "app.b."+domain, "other."+domain
	must(t, u.Client.Create(ctx, route("web", appHost, class)))
	must(t, u.Client.Create(ctx, route("web-b", bHost, class)))
	must(t, u.Client.Create(ctx, route("other", otherHost, "other")))
	registerCAPICluster(ctx, t, seed, "default", in.ClusterID, u, sel, nil)
	n1, n2, n3 := in.Nodes[0].IP, in.Nodes[1].IP, in.Nodes[2].IP
	https := func(ip, host string) (int, string, error) {
		code, body, _, err := in.Fabric.GetTLS(ctx, ip+":443", host, in.Roots)
		return code, body, err
	}

	if !t.Run("each shard's routers run and publish their own nodes", func(t *testing.T) {
		waitAnswer(ctx, t, in.DNS, appHost, framework.AnswerIs(n1, n2))
		waitAnswer(ctx, t, in.DNS, bHost, framework.AnswerIs(n3))
		waitCondition(ctx, t, seed, key(in.ClusterID), v1alpha1.ConditionShardsAvailable, metav1.ConditionTrue, v1alpha1.ReasonShardsAvailable)
	}) {
		return
	}

	t.Run("a route is served by its shard's routers only, with the cluster's certificate", func(t *testing.T) {
		// The web route has no spec.tls: what verifies is the default certificate, the cluster's.
		serves := func(ip, host string) {
			t.Helper()
			eventually(ctx, t, 4*time.Minute, func() (bool, string) {
				code, body, err := https(ip, host)
				return err == nil && code == 200 && strings.Contains(body, "hello from web"),
					fmt.Sprintf("https://%s via %s: %d %q %v", host, ip, code, body, err)
			})
		}
		serves(n1, appHost)
		serves(n2, appHost)
		serves(n3, bHost)
		for _, c := range []struct{ ip, host string }{{n3, appHost}, {n1, bHost}, {n1, otherHost}, {n3, otherHost}} {
			if code, body, err := https(c.ip, c.host); err != nil || code != 404 {
				t.Errorf("https://%s via %s: %d %q %v, want the router's 404 (not its shard's, or not its class)",
					c.host, c.ip, code, body, err)
			}
		}
	})

	t.Run("the routers publish the shard's domain in the status of the Ingresses they serve", func(t *testing.T) {
		for name, want := range map[string]string{"web": domain, "web-b": "b." + domain} {
			eventually(ctx, t, 30*time.Second, func() (bool, string) {
				ing := &networkingv1.Ingress{}
				must(t, u.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: name}, ing))
				lb := ing.Status.LoadBalancer.Ingress
				return len(lb) == 1 && lb[0].Hostname == want, fmt.Sprintf("%s: status.loadBalancer %+v, want %s", name, lb, want)
			})
		}
		ing := &networkingv1.Ingress{}
		must(t, u.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "other"}, ing))
		if lb := ing.Status.LoadBalancer.Ingress; len(lb) != 0 {
			t.Errorf("an Ingress of another class got status %+v", lb)
		}
	})

	t.Run("the routers answer the flavour's canary", func(t *testing.T) {
		c := f.Canary()
		code, body, err := in.Fabric.GetPath(ctx, fmt.Sprintf("%s:%d", n1, c.Port), appHost, c.Path)
		if err != nil || code != 200 || strings.TrimSpace(body) != c.Body {
			t.Fatalf("GET %s on %s:%d: %d %q %v, want 200 %q", c.Path, n1, c.Port, code, body, err, c.Body)
		}
	})

	t.Run("the routers report their load from their own metrics", func(t *testing.T) {
		// Over HTTPS: plain HTTP is redirected, and Traefik does not count what its entry point
		// redirects as requests.
		stop := loop(ctx, 100*time.Millisecond, func(ctx context.Context, _ int) (bool, bool) {
			code, _, err := https(n3, bHost)
			return true, err != nil || code != 200
		})
		defer stop()
		eventually(ctx, t, 2*time.Minute, func() (bool, string) {
			ci := getCI(ctx, t, seed, key(in.ClusterID))
			i := slices.IndexFunc(ci.Status.ShardLoad, func(l v1alpha1.ShardLoadStatus) bool { return l.Shard == "b" })
			if i < 0 {
				return false, fmt.Sprintf("status.shardLoad %+v has no shard b", ci.Status.ShardLoad)
			}
			l := ci.Status.ShardLoad[i]
			return l.State == v1alpha1.LoadSaturated && l.ReportingRouters == 1 && l.RequestsPerSecond >= 5 &&
				l.BytesOutPerSecond > 0 && l.Clamped == "", fmt.Sprintf("shard b's load %+v, want Saturated at ~10 requests/s", l)
		})
	})

	t.Run("only Shardgate names a shard's routers, or sets what they read as configuration", func(t *testing.T) {
		// Routers that select by class annotation read it under any prefix.
		picked := route("picks-b", "picks."+domain, "other")
		picked.Annotations = map[string]string{"example.com/ingress.class": names.ShardRouteClass("b")}
		if err := u.Client.Create(ctx, picked); !apierrors.IsForbidden(err) {
			t.Errorf("an Ingress naming shard b's routers by annotation: %v, want Forbidden", err)
		}
		// What the flavour's routers read from routes and Services as configuration (any prefix).
		guards := f.TenantGuards()
		tried := []string{"x-not-read"}
		if len(guards.Annotations) > 0 {
			tried = append(tried, guards.Annotations[0], "route-acl")
		}
		for _, name := range tried {
			ing := route("annotated-"+name, "annotated."+domain, class)
			ing.Annotations = map[string]string{"example.com/" + name: "1"}
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "annotated-" + name,
				Annotations: map[string]string{"example.com/" + name: "1"}},
				Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
			read := slices.Contains(guards.Annotations, name)
			for _, o := range []client.Object{ing, svc} {
				err := u.Client.Create(ctx, o)
				if read && !apierrors.IsForbidden(err) || !read && err != nil {
					t.Errorf("%T with annotation example.com/%s (read by the routers: %v): %v", o, name, read, err)
				}
				if err == nil {
					must(t, u.Client.Delete(ctx, o))
				}
			}
		}
		// A Service of type ExternalName names any host, the node's localhost included.
		external := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "external"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost"}}
		err := u.Client.Create(ctx, external)
		if guards.ExternalNameServices && !apierrors.IsForbidden(err) || !guards.ExternalNameServices && err != nil {
			t.Errorf("an ExternalName Service (guarded: %v): %v", guards.ExternalNameServices, err)
		}
	})

	t.Run("plain HTTP is redirected to HTTPS", func(t *testing.T) {
		code, body, err := in.Fabric.Get(ctx, n1+":80", appHost)
		if err != nil || code/100 != 3 || !strings.Contains(body, "Location: https://"+appHost) {
			t.Fatalf("http://%s: %d %q %v, want a redirect to https", appHost, code, body, err)
		}
	})

	t.Run("routers run with least privilege, as the kernel sees it", func(t *testing.T) {
		container := f.Router(render.RouterInput{Shard: shards[0]}).Container.Name
		pods := &corev1.PodList{}
		must(t, u.Client.List(ctx, pods, client.InNamespace(names.Namespace), client.HasLabels{v1alpha1.ShardLabel}))
		checked := 0
		for _, pod := range pods.Items {
			for _, cs := range pod.Status.ContainerStatuses {
				if cs.Name != container || cs.State.Running == nil {
					continue
				}
				procs, err := framework.ContainerProcesses(strings.TrimPrefix(cs.ContainerID, "containerd://"))
				must(t, err)
				if len(procs) == 0 {
					t.Errorf("pod %s: no process of container %s found", pod.Name, cs.ContainerID)
				}
				for _, p := range procs {
					ro, err := framework.RootReadOnly(p.PID)
					if errors.Is(err, fs.ErrNotExist) {
						continue // it ended since it was listed (an HAProxy worker a reload replaced: CI of 9751412)
					}
					must(t, err)
					checked++
					// On the host network: root with NET_BIND_SERVICE (bit 10) only, to bind 80 and 443.
					if !p.NoNewPrivs || p.Seccomp != 2 || p.CapEff != 1<<10 || !ro {
						t.Errorf("pod %s process %d: no_new_privs %v, seccomp %d, CapEff %#x, read-only root %v; "+
							"want true, 2 (RuntimeDefault), 0x400 (NET_BIND_SERVICE), true", pod.Name, p.PID, p.NoNewPrivs,
							p.Seccomp, p.CapEff, ro)
					}
				}
			}
		}
		if checked == 0 {
			t.Fatalf("no running %s container among the router pods", container)
		}
	})

	t.Run("a router that is not ready leaves DNS and comes back", func(t *testing.T) {
		procs := routerProcessesOn(ctx, t, u, f, in.Nodes[1].Name, v1alpha1.DefaultShardName)
		start := time.Now()
		resume := freeze(t, procs)
		// The kubelet's readiness probe fails (timeouts), the pod turns NotReady, n2 leaves.
		waitAnswerWithin(ctx, t, in.DNS, appHost, time.Minute, []string{n1})
		t.Logf("router on %s frozen → DNS answers %s only after %s", in.Nodes[1].Name, n1, time.Since(start).Round(100*time.Millisecond))
		resume()
		waitAnswerWithin(ctx, t, in.DNS, appHost, time.Minute, slices.Sorted(slices.Values([]string{n1, n2})))
	})

	t.Run("a rolling update replaces the routers, clients see no failure", func(t *testing.T) {
		old := map[types.UID]bool{}
		pods := &corev1.PodList{}
		match := client.MatchingLabels{v1alpha1.ShardLabel: v1alpha1.DefaultShardName}
		must(t, u.Client.List(ctx, pods, client.InNamespace(names.Namespace), match))
		for _, p := range pods.Items {
			old[p.UID] = true
		}
		stop := loopTLSClient(ctx, in.DNS, in.Fabric, appHost, in.Roots)
		start := time.Now()
		// A new resource request changes the pod template: a rollout, as any profile edit does.
		updateProfile(ctx, t, seed, profile, func(p *v1alpha1.IngressProfile) {
			p.Spec.Shards[0].Resources = corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}}
		})
		minReady := 2
		eventually(ctx, t, 3*time.Minute, func() (bool, string) {
			pods := &corev1.PodList{}
			if err := u.Client.List(ctx, pods, client.InNamespace(names.Namespace), match); err != nil {
				return false, err.Error()
			}
			ready, fresh := 0, 0
			for _, p := range pods.Items {
				if p.DeletionTimestamp == nil && podReady(&p) {
					ready++
					if !old[p.UID] {
						fresh++
					}
				}
			}
			minReady = min(minReady, ready)
			return fresh == 2 && len(pods.Items) == 2, fmt.Sprintf("%d pods, %d new and ready", len(pods.Items), fresh)
		})
		waitAnswer(ctx, t, in.DNS, appHost, framework.AnswerIs(n1, n2))
		n, failed := stop()
		t.Logf("rollout of 2 routers took %s; fewest ready during it %d; client: %d HTTPS requests, %d failed",
			time.Since(start).Round(time.Second), minReady, n, failed)
		// maxUnavailable 1 of 2 (host ports cannot surge): one router serves throughout.
		if minReady < 1 {
			t.Fatal("no router was ready at some point of the rollout")
		}
		if n < 20 || failed > 0 {
			t.Fatalf("%d of %d requests failed during the rollout", failed, n)
		}
	})
}

// routerProcessesOn returns the processes of shard's router container on node.
func routerProcessesOn(ctx context.Context, t *testing.T, u *framework.ControlPlane, f render.Flavour, node, shard string) []framework.ProcessIdentity {
	t.Helper()
	container := f.Router(render.RouterInput{Shard: v1alpha1.ShardSpec{Name: shard}}).Container.Name
	pods := &corev1.PodList{}
	must(t, u.Client.List(ctx, pods, client.InNamespace(names.Namespace), client.MatchingLabels{v1alpha1.ShardLabel: shard}))
	for _, pod := range pods.Items {
		if pod.Spec.NodeName != node {
			continue
		}
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.Name == container && cs.ContainerID != "" {
				procs, err := framework.ContainerProcesses(strings.TrimPrefix(cs.ContainerID, "containerd://"))
				must(t, err)
				if len(procs) > 0 {
					return procs
				}
			}
		}
	}
	t.Fatalf("no process of shard %s's router on %s", shard, node)
	return nil
}

// TestFlavourConformance runs ConformanceSpec for every registered router flavour, each in a user
// cluster of its own beside the others in one seed.
func TestFlavourConformance(t *testing.T) {
	t.Parallel() // see main_test.go
	// The set-up's deadline; each subtest has its own (subtestContext).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	flavours := render.Flavours()
	nodes := make([][]framework.RealNodeSpec, len(flavours)+1)
	for i, f := range flavours {
		nodes[i] = []framework.RealNodeSpec{{Name: "n1", Labels: map[string]string{"role": "a"}},
			{Name: "n2", Labels: map[string]string{"role": "a"}}, {Name: "n3", Labels: map[string]string{"role": "b"}}}
		if _, ok := flavourChanges[f.Name()]; ok {
			// Shard b's second router, for FlavourChangeSpec (role b from then on).
			nodes[i] = append(nodes[i], framework.RealNodeSpec{Name: "n4", Labels: map[string]string{"role": "spare"}})
		}
	}
	// And one cluster with a shard of each flavour, a node each.
	mixed := len(flavours)
	for i, f := range flavours {
		nodes[mixed] = append(nodes[mixed], framework.RealNodeSpec{Name: fmt.Sprintf("m%d", i+1),
			Labels: map[string]string{"role": string(f.Name())}})
	}
	env := framework.StartEnvironment(t, framework.EnvironmentOptions{UserClusters: len(flavours) + 1, DNS: true, RealNodes: nodes})
	pebble := framework.StartPebble(t, env.DNS, framework.PebbleOptions{})
	cm := framework.StartCertManager(t, env.Seed, env.DNS)
	const certNS = "shardgate"
	must(t, env.Seed.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: certNS}}))
	must(t, cm.CreateACMEIssuer(ctx, env.Seed, pebble, env.DNS, framework.ACMEIssuer{Name: "pebble", Namespace: certNS, SkipSelfCheck: true}))
	roots, err := pebble.Roots(ctx)
	must(t, err)
	framework.StartController(t, env.Seed, "--dns-zone="+env.DNS.Zone, "--certificate-namespace="+certNS)
	t.Run("every flavour in one cluster", func(t *testing.T) {
		t.Parallel()
		FlavoursSideBySideSpec(subtestContext(t, 10*time.Minute), t, func() ConformanceSpecInput {
			return ConformanceSpecInput{Seed: env.Seed, User: env.Users[mixed], DNS: env.DNS, Roots: roots,
				Fabric: env.Fabrics[mixed], Nodes: env.Nodes[mixed], ClusterID: "conf-mixed", Issuer: "pebble"}
		})
	})
	for i, f := range flavours {
		t.Run(string(f.Name()), func(t *testing.T) {
			t.Parallel() // a user cluster each
			input := func() ConformanceSpecInput {
				return ConformanceSpecInput{Flavour: f, Seed: env.Seed, User: env.Users[i], DNS: env.DNS, Roots: roots,
					Fabric: env.Fabrics[i], Nodes: env.Nodes[i], ClusterID: "conf-" + string(f.Name()), Issuer: "pebble"}
			}
			ConformanceSpec(subtestContext(t, 12*time.Minute), t, input)
			if to, ok := flavourChanges[f.Name()]; ok && !t.Failed() {
				t.Run("a live shard changes flavour to "+string(to)+" under a looping client", func(t *testing.T) {
					FlavourChangeSpec(subtestContext(t, 8*time.Minute), t, input(), to)
				})
			}
		})
	}
}

// subtestContext is a parallel subtest's own deadline, counted from when it runs: parallel subtests
// wait for a slot beside the package's other tests (-parallel is the number of CPUs), and in CI of
// 8d88d6a the last flavour began 14 minutes after its parent's set-up, under a deadline counted from
// there.
func subtestContext(t *testing.T, timeout time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
}

// FlavoursSideBySideSpec: one cluster with a shard of every flavour, each on a node of its own
// (role <flavour>), HTTPS with the cluster's certificate: each Ingress is served through its
// class's flavour's routers only, over HTTPS and HTTP (redirected), and users and operators are
// told each shard's router type.
func FlavoursSideBySideSpec(ctx context.Context, t *testing.T, inputGetter func() ConformanceSpecInput) {
	in := inputGetter()
	seed, u := in.Seed, in.User
	domain := in.ClusterID + "." + in.DNS.Zone
	flavours := render.Flavours()
	shards := shardPerFlavour()
	hosts := map[v1alpha1.Flavour]string{}
	for _, s := range shards {
		hosts[s.Flavour] = "app." + names.ShardDomain(s.Name, domain)
	}
	sel := map[string]string{"conformance": "mixed"}
	must(t, seed.Client.Create(ctx, &v1alpha1.IngressProfile{ObjectMeta: metav1.ObjectMeta{Name: "conformance-mixed"},
		Spec: v1alpha1.IngressProfileSpec{ClusterSelector: metav1.LabelSelector{MatchLabels: sel}, DNS: v1alpha1.DNSSettings{TTL: 5},
			Shards: shards, TLS: v1alpha1.TLSSettings{RedirectHTTP: true,
				IssuerRef: &v1alpha1.IssuerReference{Name: in.Issuer, Kind: v1alpha1.KindIssuer}}}}))
	must(t, framework.DeployBackend(ctx, u, "default", "web", 1))
	for _, f := range flavours {
		ing := shardIngress("web-"+string(f.Name()), hosts[f.Name()])
		ing.Spec.IngressClassName = ptr.To(f.IngressClass().Name)
		must(t, u.Client.Create(ctx, ing))
	}
	registerCAPICluster(ctx, t, seed, "default", in.ClusterID, u, sel, nil)

	for i, f := range flavours {
		node := in.Nodes[i].IP
		waitAnswer(ctx, t, in.DNS, hosts[f.Name()], framework.AnswerIs(node))
		eventually(ctx, t, 4*time.Minute, func() (bool, string) {
			code, body, _, err := in.Fabric.GetTLS(ctx, node+":443", hosts[f.Name()], in.Roots)
			return err == nil && code == 200 && strings.Contains(body, "hello from web"),
				fmt.Sprintf("https://%s via %s's router: %d %q %v", hosts[f.Name()], f.Name(), code, body, err)
		})
		if code, body, err := in.Fabric.Get(ctx, node+":80", hosts[f.Name()]); err != nil || code/100 != 3 ||
			!strings.Contains(body, "Location: https://"+hosts[f.Name()]) {
			t.Errorf("http://%s via %s's router: %d %q %v, want a redirect to https", hosts[f.Name()], f.Name(), code, body, err)
		}
		for _, g := range flavours {
			if g.Name() == f.Name() {
				continue
			}
			// The other flavour's routes are not this router's (its default answer: 404).
			if code, body, _, err := in.Fabric.GetTLS(ctx, node+":443", hosts[g.Name()], in.Roots); err != nil || code != 404 {
				t.Errorf("https://%s (a %s route) via %s's router: %d %q %v, want 404", hosts[g.Name()], g.Name(),
					f.Name(), code, body, err)
			}
		}
	}

	info := &corev1.ConfigMap{}
	must(t, u.Client.Get(ctx, client.ObjectKey{Namespace: names.UserInfoNamespace, Name: names.UserInfoName}, info))
	ci := getCI(ctx, t, seed, key(in.ClusterID))
	for _, s := range shards {
		if info.Data["shard."+s.Name+".flavour"] != string(s.Flavour) ||
			info.Data["shard."+s.Name+".ingressClass"] != render.ShardClass(s) {
			t.Errorf("users are told of shard %s: %v", s.Name, info.Data)
		}
		i := slices.IndexFunc(ci.Status.Shards, func(st v1alpha1.ShardStatus) bool { return st.Name == s.Name })
		if i < 0 || ci.Status.Shards[i].Flavour != string(s.Flavour) {
			t.Errorf("status.shards says of shard %s: %+v", s.Name, ci.Status.Shards)
		}
	}
}

// shardPerFlavour is a shard of every registered flavour, one router each on the nodes labelled
// role=<flavour>; the first flavour's is the default shard.
func shardPerFlavour() []v1alpha1.ShardSpec {
	var shards []v1alpha1.ShardSpec
	for i, f := range render.Flavours() {
		name := string(f.Name())
		if i == 0 {
			name = v1alpha1.DefaultShardName
		}
		shards = append(shards, v1alpha1.ShardSpec{Name: name, Flavour: f.Name(), Image: flavourImages[f.Name()],
			ImagePullPolicy: corev1.PullNever, Replicas: ptr.To[int32](1), NodeSelector: map[string]string{"role": string(f.Name())}})
	}
	return shards
}
