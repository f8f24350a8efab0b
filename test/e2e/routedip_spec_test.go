package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/test/framework"
)

const (
	routedIPJobNamespace = "shardgate-routedip"
	routedIP1            = "10.125.0.10"
	routedIP2            = "10.125.0.11"
)

// TestRoutedIP proves routed IPs end to end: a seed with a real node (the class's Jobs run there
// as real pods, calling the simulated cloud with the class's Secret), one user cluster with three
// real nodes registered with exactly config/user-cluster/rbac.yaml, a RoutedIP shard of two
// routers of each flavour in turn, BIND and external-dns. The cloud (test/simcloud) really routes
// the address to the node it is assigned to.
//
// The flavours run side by side, each in an environment of its own: the test runs before the
// package's parallel tests (main_test.go), so only the two of them share the CPU, as any two
// tests do later (the flavours one after the other took 314 s of CI's critical path, of 1,547 s).
func TestRoutedIP(t *testing.T) {
	for _, f := range render.Flavours() {
		t.Run(string(f.Name()), func(t *testing.T) {
			t.Parallel() // with the other flavours only: TestRoutedIP itself is not parallel
			routedIPSpec(t, f)
		})
	}
}

func routedIPSpec(t *testing.T, f render.Flavour) {
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	e := startRoutedIP(ctx, t, false, f)
	seed, u, k, host, fab, cloud, providerOf, record, cloudHolder := e.env.Seed, e.env.Users[0], e.key, e.host, e.fabric, e.cloud, e.providerOf, e.record, e.cloudHolder
	env := e.env
	httpOK := func(t *testing.T, within time.Duration) {
		t.Helper()
		eventually(ctx, t, within, func() (bool, string) {
			code, body := fabricGet(ctx, fab, routedIP1, host)
			return code == 200 && strings.Contains(body, "hello from web"), fmt.Sprintf("http://%s (%s): %d %q", routedIP1, host, code, body)
		})
	}

	if !t.Run("the routed IP lands on the youngest node serving the shard; DNS, HTTP and the firewall follow", func(t *testing.T) {
		start := time.Now()
		eventually(ctx, t, 5*time.Minute, func() (bool, string) {
			c := condition(ctx, t, seed, k, v1alpha1.ConditionRoutedIPsAssigned)
			if c == nil {
				return false, "no RoutedIPsAssigned"
			}
			return c.Status == metav1.ConditionTrue, fmt.Sprintf("RoutedIPsAssigned %s/%s: %s", c.Status, c.Reason, c.Message)
		})
		t.Logf("class created → routed IP assigned in %s", time.Since(start).Round(100*time.Millisecond))
		want := youngestServing(ctx, t, u, names.Namespace, names.RouterName("edge"))
		rec := record(routedIP1)
		if rec.Node != want || rec.ProviderID != providerOf[want] {
			t.Fatalf("record %+v: want node %s (%s), the youngest running a ready router", rec, want, providerOf[want])
		}
		if h := cloudHolder(routedIP1); h != providerOf[want] {
			t.Fatalf("the cloud routes %s to %q, want %s", routedIP1, h, providerOf[want])
		}
		waitAnswer(ctx, t, env.DNS, host, framework.AnswerIs(routedIP1))
		httpOK(t, 30*time.Second)
		// Exactly the router's ports (80 and 443, outside the NodePort range) open on the holder.
		eventually(ctx, t, time.Minute, func() (bool, string) {
			s, err := cloud.State(ctx)
			must(t, err)
			return fmt.Sprint(s.Firewall) == fmt.Sprintf("[{80 TCP [%[1]s]} {443 TCP [%[1]s]}]", providerOf[want]), fmt.Sprintf("cloud firewall %v", s.Firewall)
		})
		assertTaints(ctx, t, u, want)
		ri := &v1alpha1.RoutedIP{}
		must(t, u.Client.Get(ctx, client.ObjectKey{Namespace: names.Namespace, Name: names.RoutedIPName("edge", routedIP1)}, ri))
		if ri.Status.AssignedNode != want || ri.Status.Phase != v1alpha1.RoutedIPAssigned {
			t.Errorf("user cluster RoutedIP status %+v: want assigned to %s", ri.Status, want)
		}
	}) {
		return
	}

	t.Run("a failing updateRoutedIP Job is an Event and a retry; the old holder keeps the address", func(t *testing.T) {
		from := record(routedIP1).Node
		must(t, cloud.FailAssign(ctx, 2))
		setUnschedulable(ctx, t, u, from, true)
		defer setUnschedulable(ctx, t, u, from, false)
		eventually(ctx, t, 2*time.Minute, func() (bool, string) {
			r := record(routedIP1)
			return r.Failures >= 1 && r.Reason == v1alpha1.ReasonMoveFailed, fmt.Sprintf("record %+v", r)
		})
		r := record(routedIP1)
		c := condition(ctx, t, seed, k, v1alpha1.ConditionRoutedIPsAssigned)
		t.Logf("while failing: RoutedIPsAssigned %s/%s: %s", c.Status, c.Reason, c.Message)
		if r.Node != from || cloudHolder(routedIP1) != providerOf[from] || c.Reason != v1alpha1.ReasonMoveFailed || !strings.Contains(c.Message, "simulated cloud failure") {
			t.Errorf("after a failed Job: record %+v, cloud holder %s, condition %s: want %s kept and the cloud's answer in the condition", r, cloudHolder(routedIP1), c.Message, from)
		}
		code, _ := fabricGet(ctx, fab, routedIP1, host)
		if code != 200 {
			t.Errorf("HTTP through %s while the move fails: %d", routedIP1, code)
		}
		// The event recorder sends asynchronously: the Event may land after the status.
		eventually(ctx, t, 30*time.Second, func() (bool, string) {
			evs := &corev1.EventList{}
			must(t, seed.Client.List(ctx, evs, client.InNamespace("default")))
			return slices.ContainsFunc(evs.Items, func(e corev1.Event) bool {
				return e.InvolvedObject.Name == "r1" && e.Reason == v1alpha1.ReasonMoveFailed &&
					strings.Contains(e.Message, "simulated cloud failure")
			}), "no MoveFailed Event on ClusterIngress r1"
		})
		// The third Job (after 5 s and 10 s of backoff) succeeds: the address leaves the cordoned node.
		eventually(ctx, t, 2*time.Minute, func() (bool, string) {
			r := record(routedIP1)
			return r.Node != "" && r.Node != from && r.Reason == v1alpha1.ReasonRoutedIPsAssigned, fmt.Sprintf("record %+v", r)
		})
		to := record(routedIP1).Node
		if h := cloudHolder(routedIP1); h != providerOf[to] {
			t.Errorf("cloud holder %s, record %s", h, to)
		}
		httpOK(t, 10*time.Second)
		assertTaints(ctx, t, u, to)
		// The old holder drops out of the firewall; the new one is in it.
		eventually(ctx, t, time.Minute, func() (bool, string) {
			s, err := cloud.State(ctx)
			must(t, err)
			return fmt.Sprint(s.Firewall) == fmt.Sprintf("[{80 TCP [%[1]s]} {443 TCP [%[1]s]}]", providerOf[to]), fmt.Sprintf("cloud firewall %v", s.Firewall)
		})
		s, err := cloud.State(ctx)
		must(t, err)
		t.Logf("moved %s → %s after %d assign calls; firewall %v", from, to, s.AssignCalls, s.Firewall)
		// The metrics count both moves (first assignment, this one) and both failed Jobs.
		m, err := e.controller.Metrics()
		must(t, err)
		for _, want := range []string{`shardgate_routed_ip_moves_total{class="sim"} 2`, `shardgate_routed_ip_move_failures_total{class="sim"} 2`,
			`shardgate_routed_ip_move_duration_seconds_count{class="sim"} 2`} {
			if !strings.Contains(m, want) {
				t.Errorf("metrics lack %s", want)
			}
		}
		// The dashboard's routed-IP panels (firewall failures appear only once one failed).
		checkDashboardMetrics(t, m, "shardgate_routed_ip_move")
	})

	t.Run("the holder's router stops answering: the address moves and HTTP follows", func(t *testing.T) {
		from := record(routedIP1).Node
		stop := loopHTTP(ctx, t, fab, routedIP1, host)
		start := time.Now()
		// Every process of the router's container (HAProxy's controller and HAProxy itself).
		for _, p := range routerProcessesOn(ctx, t, u, f, from, "edge") {
			must(t, syscallStop(p.PID))
			defer func() { _ = syscallCont(p.PID) }()
		}
		// Visible in the API: the router's endpoint turns not ready (two failed probes).
		var visible time.Time
		eventually(ctx, t, time.Minute, func() (bool, string) {
			if !servingNodes(ctx, t, u, names.Namespace, names.RouterName("edge"))[from] {
				visible = time.Now()
				return true, ""
			}
			return false, from + " still serves"
		})
		eventually(ctx, t, 2*time.Minute, func() (bool, string) {
			r := record(routedIP1)
			return r.Node != from && r.Reason == v1alpha1.ReasonRoutedIPsAssigned, fmt.Sprintf("record %+v", r)
		})
		var working time.Time
		eventually(ctx, t, 30*time.Second, func() (bool, string) {
			code, body, err := fab.GetQuick(ctx, routedIP1+":80", host, 300*time.Millisecond)
			working = time.Now()
			return err == nil && code == 200 && strings.Contains(body, "hello from web"), fmt.Sprintf("%d %v", code, err)
		})
		n, failed := stop()
		t.Logf("router hung on %s at +0: not ready in the API after %s; HTTP through %s working again %s after that (on %s); %d requests, %d failed",
			from, visible.Sub(start).Round(10*time.Millisecond), routedIP1, working.Sub(visible).Round(10*time.Millisecond), record(routedIP1).Node, n, failed)
	})

	t.Run("two routed IPs with perNodeIPLimit 1 are on different nodes; an address outside the class is refused", func(t *testing.T) {
		// A cluster owner's own RoutedIP for the same Service, and one for an address not theirs.
		for _, ri := range []*v1alpha1.RoutedIP{
			{ObjectMeta: metav1.ObjectMeta{Namespace: names.Namespace, Name: "mine"}, Spec: v1alpha1.RoutedIPSpec{ClassName: "sim", Address: routedIP2,
				ServiceRef: v1alpha1.ServiceReference{Name: names.RouterName("edge")}}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "stolen"}, Spec: v1alpha1.RoutedIPSpec{ClassName: "sim", Address: "10.99.0.1",
				ServiceRef: v1alpha1.ServiceReference{Name: "web"}}},
		} {
			must(t, u.Client.Create(ctx, ri))
		}
		eventually(ctx, t, 2*time.Minute, func() (bool, string) {
			a, b := record(routedIP1), record(routedIP2)
			return a.Node != "" && b.Node != "" && a.Reason == v1alpha1.ReasonRoutedIPsAssigned && b.Reason == v1alpha1.ReasonRoutedIPsAssigned,
				fmt.Sprintf("records %+v / %+v", a, b)
		})
		a, b := record(routedIP1), record(routedIP2)
		if a.Node == b.Node {
			t.Errorf("both routed IPs on %s", a.Node)
		}
		stolen := &v1alpha1.RoutedIP{}
		eventually(ctx, t, 30*time.Second, func() (bool, string) {
			must(t, u.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "stolen"}, stolen))
			return stolen.Status.Phase == v1alpha1.RoutedIPRefused, fmt.Sprintf("status %+v", stolen.Status)
		})
		if c := stolen.Status.Conditions; len(c) == 0 || c[0].Reason != v1alpha1.ReasonAddressNotInClass {
			t.Errorf("refused RoutedIP conditions %+v: want AddressNotInClass", c)
		}
		s, err := cloud.State(ctx)
		must(t, err)
		if _, ok := s.RoutedIPs["10.99.0.1"]; ok {
			t.Errorf("the cloud was asked for an address outside the class")
		}
		jobs := &batchv1.JobList{}
		must(t, seed.Client.List(ctx, jobs, client.InNamespace(routedIPJobNamespace)))
		t.Logf("%s on %s, %s on %s; %d class Jobs left in the seed", routedIP1, a.Node, routedIP2, b.Node, len(jobs.Items))
	})
}

// routedIPEnv is a running routed-IP set-up (see TestRoutedIP).
type routedIPEnv struct {
	env        *framework.Environment
	cloud      *framework.SimCloud
	controller *framework.Controller
	fabric     *framework.Fabric
	key        types.NamespacedName
	host       string
	providerOf map[string]string
	tb         testing.TB
	ctx        context.Context
}

// startRoutedIP starts TestRoutedIP's set-up (class firewallPostAllow as given); the shard "edge"
// has two routers of flavour f and the address routedIP1, the host app.edge.r1.<zone> routes to
// the sample app.
func startRoutedIP(ctx context.Context, tb testing.TB, postAllow bool, f render.Flavour) *routedIPEnv {
	env := framework.StartEnvironment(tb, framework.EnvironmentOptions{UserClusters: 1, DNS: true, SeedNode: true,
		RealNodes: [][]framework.RealNodeSpec{{{Name: "n1"}, {Name: "n2"}, {Name: "n3"}}}})
	cloud, err := framework.StartSimCloud(env.Fabrics[0], env.Nodes[0])
	must(tb, err)
	tb.Cleanup(func() { _ = cloud.Stop() })
	seed, u, zone := env.Seed, env.Users[0], env.DNS.Zone
	// The chart's RBAC, released in the Job namespace: its Jobs, their pods and the address
	// Leases are allowed there only.
	sa := chartServiceAccount(ctx, tb, seed, routedIPJobNamespace, "--set", "sources.kubeconfigSecretNamespaces={default}")
	c := framework.StartControllerAs(tb, seed, sa, "--dns-zone="+zone, "--routed-ip-job-namespace="+routedIPJobNamespace)
	sel := map[string]string{"routedip": "yes"}
	edge := v1alpha1.ShardSpec{Name: "edge", Flavour: f.Name(), Image: flavourImages[f.Name()], ImagePullPolicy: corev1.PullNever,
		Replicas: ptr.To[int32](2), Publishing: v1alpha1.PublishRoutedIP,
		RoutedIP: &v1alpha1.RoutedIPSettings{ClassName: "sim", Addresses: []string{routedIP1}}}
	createProfile(ctx, tb, seed, "rip", sel, v1alpha1.DNSSettings{TTL: 5}, realRouter(v1alpha1.ShardSpec{Name: v1alpha1.DefaultShardName, Publishing: v1alpha1.PublishNodePort}), edge)
	// A backend on every node: a node failing takes no app down with it.
	must(tb, framework.DeployBackend(ctx, u, "default", "web", 3))
	host := "app.edge.r1." + zone
	ing := shardIngress("web", host)
	ing.Spec.IngressClassName = ptr.To(f.IngressClass().Name)
	must(tb, u.Client.Create(ctx, ing))
	kc, err := u.RestrictedKubeconfig(ctx, "shardgate-rip", "config/user-cluster/rbac.yaml")
	must(tb, err)
	putKubeconfigSecret(ctx, tb, seed, "default", "r1", "r1", kc, sel)
	e := &routedIPEnv{env: env, cloud: cloud, controller: c, fabric: env.Fabrics[0], key: key("r1"), host: host, providerOf: map[string]string{}, tb: tb, ctx: ctx}
	for _, n := range env.Nodes[0] {
		e.providerOf[n.Name] = n.ProviderID()
	}
	// The class comes once both routers serve: until then the RoutedIP waits (ClassNotFound), so
	// the first election sees both nodes and must pick the younger.
	eventually(ctx, tb, 4*time.Minute, func() (bool, string) {
		serving := servingNodes(ctx, tb, u, names.Namespace, names.RouterName("edge"))
		return len(serving) == 2, fmt.Sprintf("nodes serving the edge shard: %v", serving)
	})
	if r := e.record(routedIP1); r.Node != "" {
		tb.Fatalf("an address assigned without a class: %+v", r)
	}
	createRoutedIPClass(ctx, tb, seed, cloud, postAllow)
	return e
}

// record is the seed's record of addr (empty while there is none).
func (e *routedIPEnv) record(addr string) v1alpha1.RoutedIPRecord {
	ci := &v1alpha1.ClusterIngress{}
	if err := e.env.Seed.Client.Get(e.ctx, e.key, ci); err != nil {
		must(e.tb, client.IgnoreNotFound(err)) // not created yet: no record
	}
	for _, r := range ci.Status.RoutedIPs {
		if r.Address == addr {
			return r
		}
	}
	return v1alpha1.RoutedIPRecord{}
}

// cloudHolder is the instance the cloud routes addr to.
func (e *routedIPEnv) cloudHolder(addr string) string {
	s, err := e.cloud.State(e.ctx)
	must(e.tb, err)
	return s.RoutedIPs[addr]
}

// createRoutedIPClass creates the Job namespace with the cloud's credentials and the class "sim"
// whose Jobs run cloudctl against the simulated cloud.
func createRoutedIPClass(ctx context.Context, t testing.TB, seed *framework.ControlPlane, cloud *framework.SimCloud, postAllow bool) {
	// The namespace exists already when the chart's RBAC was released in it.
	if err := seed.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: routedIPJobNamespace}}); !apierrors.IsAlreadyExists(err) {
		must(t, err)
	}
	must(t, seed.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: routedIPJobNamespace, Name: "simcloud"},
		StringData: map[string]string{"CLOUD_URL": cloud.URL, "CLOUD_TOKEN": cloud.Token}}))
	job := func(cmd string) batchv1.JobSpec {
		return batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "cloudctl", Image: framework.CloudctlImage, ImagePullPolicy: corev1.PullNever, Args: []string{cmd},
				SecurityContext: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532), AllowPrivilegeEscalation: ptr.To(false),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}},
		}}}
	}
	must(t, seed.Client.Create(ctx, &v1alpha1.ClusterRoutedIPClass{ObjectMeta: metav1.ObjectMeta{Name: "sim"},
		Spec: v1alpha1.ClusterRoutedIPClassSpec{Addresses: []string{"10.125.0.10-10.125.0.19"}, PerNodeIPLimit: 1, FirewallPostAllow: postAllow, AllowClusterOwners: true,
			// The harness' instances (framework.RealNode.ProviderID): its one fabric's nodes n1, n2, ….
			ProviderIDPattern: "sim://[a-z0-9-]+/n[0-9]+",
			FromSecretsRef:    []corev1.LocalObjectReference{{Name: "simcloud"}}, UpdateRoutedIP: job("assign"), UpdateFirewall: job("firewall")}}))
}

// servingNodes are the nodes with a ready endpoint of namespace/service.
func servingNodes(ctx context.Context, t testing.TB, u *framework.ControlPlane, namespace, service string) map[string]bool {
	t.Helper()
	eps := &discoveryv1.EndpointSliceList{}
	must(t, u.Client.List(ctx, eps, client.InNamespace(namespace), client.MatchingLabels{discoveryv1.LabelServiceName: service}))
	out := map[string]bool{}
	for _, s := range eps.Items {
		for _, e := range s.Endpoints {
			if e.NodeName != nil && (e.Conditions.Ready == nil || *e.Conditions.Ready) {
				out[*e.NodeName] = true
			}
		}
	}
	return out
}

// youngestServing is the newest node with a ready endpoint of the Service.
func youngestServing(ctx context.Context, t testing.TB, u *framework.ControlPlane, namespace, service string) string {
	t.Helper()
	nodes := &corev1.NodeList{}
	must(t, u.Client.List(ctx, nodes))
	serving := servingNodes(ctx, t, u, namespace, service)
	var best *corev1.Node
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if serving[n.Name] && (best == nil || n.CreationTimestamp.After(best.CreationTimestamp.Time) ||
			n.CreationTimestamp.Equal(&best.CreationTimestamp) && n.Name < best.Name) {
			best = n
		}
	}
	if best == nil {
		t.Fatalf("no node serves %s/%s", namespace, service)
	}
	return best.Name
}

// assertTaints: exactly holder carries the routed-IP taint (PreferNoSchedule).
func assertTaints(ctx context.Context, t testing.TB, u *framework.ControlPlane, holder string) {
	t.Helper()
	eventually(ctx, t, 30*time.Second, func() (bool, string) {
		nodes := &corev1.NodeList{}
		must(t, u.Client.List(ctx, nodes))
		var tainted []string
		for _, n := range nodes.Items {
			for _, tt := range n.Spec.Taints {
				if tt.Key == v1alpha1.RoutedIPTaintKey && tt.Effect == corev1.TaintEffectPreferNoSchedule {
					tainted = append(tainted, n.Name)
				}
			}
		}
		return slices.Equal(tainted, []string{holder}), fmt.Sprintf("tainted %v, want [%s]", tainted, holder)
	})
}

func setUnschedulable(ctx context.Context, t testing.TB, u *framework.ControlPlane, node string, v bool) {
	t.Helper()
	n := &corev1.Node{}
	must(t, u.Client.Get(ctx, client.ObjectKey{Name: node}, n))
	old := n.DeepCopy()
	n.Spec.Unschedulable = v
	must(t, u.Client.Patch(ctx, n, client.MergeFrom(old)))
}
