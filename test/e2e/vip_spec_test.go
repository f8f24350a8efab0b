package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/test/framework"
)

// VIPSpecInput: a seed with BIND and external-dns, one user cluster with three real nodes on one
// L2 segment (the fabric), and the controller; the VIP shard's router flavour, the cluster's ID
// and a pool of ten VIPs from its first.
type VIPSpecInput struct {
	Seed      *framework.ControlPlane
	User      *framework.ControlPlane
	DNS       *framework.DNSServer
	Fabric    *framework.Fabric
	Nodes     []*framework.RealNode
	Flavour   render.Flavour
	ClusterID string
	FirstVIP  int
}

// VIPSpec proves VIP shards end to end: the seed allocates two VIPs from the pool, routers run
// with keepalived beside them (real kubelets, the rendered spec), the VIPs are mastered on
// different nodes and reported as observed, DNS answers exactly the VIPs, HTTP through each
// returns 200, and a router that stops answering or a node whose link goes down loses its VIP
// to the other node.
func VIPSpec(ctx context.Context, t *testing.T, inputGetter func() VIPSpecInput) {
	in := inputGetter()
	seed, u, zone, id := in.Seed, in.User, in.DNS.Zone, in.ClusterID
	f := in.Flavour
	sel := map[string]string{"vip": id}
	pool := fmt.Sprintf("10.123.0.%d-10.123.0.%d", in.FirstVIP, in.FirstVIP+9)
	edge := v1alpha1.ShardSpec{Name: "edge", Flavour: f.Name(), Image: flavourImages[f.Name()], ImagePullPolicy: corev1.PullNever,
		Replicas: ptr.To[int32](2), Publishing: v1alpha1.PublishVIP,
		VIP: &v1alpha1.VIPSettings{Pool: []string{pool}, Count: 2, Image: framework.KeepalivedImage,
			AdvertInterval: &metav1.Duration{Duration: 100 * time.Millisecond}}}
	// The default shard behind a NodePort Service: two host-network shards cannot share two nodes' ports.
	createProfile(ctx, t, seed, "vip-"+id, sel, v1alpha1.DNSSettings{TTL: 5}, realRouter(v1alpha1.ShardSpec{Name: v1alpha1.DefaultShardName, Publishing: v1alpha1.PublishNodePort}), edge)
	must(t, framework.DeployBackend(ctx, u, "default", "web", 1))
	host := "app.edge." + id + "." + zone
	ing := shardIngress("web", host)
	ing.Spec.IngressClassName = ptr.To(f.IngressClass().Name)
	must(t, u.Client.Create(ctx, ing))
	kc, err := u.RestrictedKubeconfig(ctx, "shardgate-vip", "config/user-cluster/rbac.yaml")
	must(t, err)
	putKubeconfigSecret(ctx, t, seed, "default", id, id, kc, sel)
	k := key(id)
	routerContainer := func(f render.Flavour) string {
		return f.Router(render.RouterInput{Shard: v1alpha1.ShardSpec{Name: "edge"}}).Container.Name
	}
	traefik, _ := render.FlavourFor(v1alpha1.FlavourTraefik)

	// holders reads the observed holder of every VIP from status.
	holders := func() map[string]string {
		ci := getCI(ctx, t, seed, k)
		out := map[string]string{}
		for _, s := range ci.Status.VIPs {
			if s.Shard == "edge" {
				for _, a := range s.Addresses {
					out[a.Address] = a.Holder
				}
			}
		}
		return out
	}
	var vips []string
	// waitHeld waits until every VIP is observed held (the first time: allocation, the routers'
	// pods, and the kubelet bringing keepalived its rendered configuration, about a minute).
	waitHeld := func(t *testing.T, within time.Duration) {
		t.Helper()
		eventually(ctx, t, within, func() (bool, string) {
			c := condition(ctx, t, seed, k, v1alpha1.ConditionVIPsAvailable)
			if c == nil {
				return false, "no VIPsAvailable"
			}
			return c.Status == metav1.ConditionTrue, fmt.Sprintf("VIPsAvailable %s/%s: %s", c.Status, c.Reason, c.Message)
		})
	}
	if !t.Run("two VIPs allocated, mastered on different nodes, answered by DNS and HTTP", func(t *testing.T) {
		start := time.Now()
		waitHeld(t, 4*time.Minute)
		t.Logf("registered → every VIP held in %s", time.Since(start).Round(100*time.Millisecond))
		// The first router's node holds both until the second is among the peers (the kubelet
		// brings each the re-rendered configuration); then the second VIP's home takes it.
		var h map[string]string
		eventually(ctx, t, 3*time.Minute, func() (bool, string) {
			h = holders()
			vips = vips[:0]
			for a := range h {
				vips = append(vips, a)
			}
			slices.Sort(vips)
			return len(vips) == 2 && h[vips[0]] != "" && h[vips[1]] != "" && h[vips[0]] != h[vips[1]], fmt.Sprintf("VIPs and holders %v: want two VIPs on different nodes", h)
		})
		t.Logf("registered → VIPs mastered on different nodes in %s", time.Since(start).Round(100*time.Millisecond))
		t.Logf("VIPs: %s on %s, %s on %s", vips[0], h[vips[0]], vips[1], h[vips[1]])
		waitAnswer(ctx, t, in.DNS, host, framework.AnswerIs(vips...))
		waitAnswer(ctx, t, in.DNS, "edge."+id+"."+zone, framework.AnswerIs(vips...))
		for _, v := range vips {
			eventually(ctx, t, 30*time.Second, func() (bool, string) {
				code, body := fabricGet(ctx, in.Fabric, v, host)
				return code == 200 && strings.Contains(body, "hello from web"), fmt.Sprintf("http://%s (%s): %d %q", v, host, code, body)
			})
		}
		// The observed holder really has the address: on its interface, not on the other. Status
		// follows the agents' reports, so the two agree once a handover (the second VIP going
		// home as its node joins the peers) is reported.
		eventually(ctx, t, 15*time.Second, func() (bool, string) {
			h := holders()
			for _, v := range vips {
				for _, n := range in.Nodes {
					out, err := n.Exec(ctx, "ip", "-4", "-o", "addr", "show", "dev", "eth0")
					must(t, err)
					if has := strings.Contains(string(out), " "+v+"/"); has != (h[v] == n.Name) {
						return false, fmt.Sprintf("%s on %s: %v, status says the holder is %s", v, n.Name, has, h[v])
					}
				}
			}
			return true, ""
		})
		// The routers serving above were admitted with no automounted token: only the rendered
		// token volume, mounted where the API is called (security item 23).
		pods := &corev1.PodList{}
		must(t, u.Client.List(ctx, pods, client.InNamespace(names.Namespace)))
		for _, p := range pods.Items {
			want := map[bool]string{true: routerContainer(f) + " vip-agent", false: routerContainer(traefik)}[strings.HasPrefix(p.Name, "router-edge-")]
			if got := tokenMounts(p); strings.HasPrefix(p.Name, "router-") && got != want {
				t.Errorf("pod %s: token mounted into [%s], want [%s]", p.Name, got, want)
			}
		}
		// And as they run: keepalived (and what starts it) cannot see a token, the agent sees
		// one and is not root.
		agents, keepaliveds := vipProcesses(t, "edge")
		if len(agents) == 0 || len(keepaliveds) == 0 {
			t.Errorf("VIP processes found: agents %v, keepalived %v", agents, keepaliveds)
		}
		for _, p := range keepaliveds {
			if p.token {
				t.Errorf("keepalived process %d (%s) sees the router's token", p.pid, p.cmd)
			}
		}
		for _, p := range agents {
			if !p.token || p.uid == "0" {
				t.Errorf("agent process %d: token %v, uid %s", p.pid, p.token, p.uid)
			}
		}
	}) {
		return
	}
	// answered waits until a router answers on v again, probing every 20 ms with a 300 ms
	// timeout (a hung router must count as no answer quickly). With wantApp, the sample app must
	// answer through it; without, the router's own 404 for a host it has no route for counts (the
	// app's one pod may sit behind the failed node's link, where the router would wait for it).
	answered := func(t *testing.T, v string, start time.Time, wantApp bool) {
		t.Helper()
		probeHost := host
		if !wantApp {
			probeHost = "no-route.example"
		}
		for time.Since(start) < 20*time.Second {
			code, body, err := in.Fabric.GetQuick(ctx, v+":80", probeHost, 300*time.Millisecond)
			if err == nil && (wantApp && code == 200 && strings.Contains(body, "hello from web") || !wantApp && code == 404) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("%s does not answer 20 s after its holder failed", v)
	}
	nodeByName := func(name string) *framework.RealNode {
		for _, n := range in.Nodes {
			if n.Name == name {
				return n
			}
		}
		t.Fatalf("no node %s", name)
		return nil
	}

	t.Run("a router that stops answering loses its VIP to the other node", func(t *testing.T) {
		v := vips[0]
		from := nodeByName(holders()[v])
		start := time.Now()
		// SIGSTOP: the router is there but answers nothing (a hung process; every process of the
		// router's container: HAProxy's controller and HAProxy itself).
		for _, p := range routerProcessesOn(ctx, t, u, f, from.Name, "edge") {
			must(t, syscallStop(p.PID))
			defer func() { _ = syscallCont(p.PID) }()
		}
		answered(t, v, start, true)
		t.Logf("router hung on %s: %s answered again after %s", from.Name, v, time.Since(start).Round(10*time.Millisecond))
		eventually(ctx, t, 20*time.Second, func() (bool, string) {
			h := holders()[v]
			return h != "" && h != from.Name, fmt.Sprintf("status holder of %s: %q", v, h)
		})
	})

	t.Run("a router moving to another node changes the peers without moving the other VIP", func(t *testing.T) {
		// Settled after the failovers: both VIPs back home on different nodes, steady for 2 s.
		var h map[string]string
		var since time.Time
		eventually(ctx, t, 2*time.Minute, func() (bool, string) {
			now := holders()
			spread := now[vips[0]] != "" && now[vips[1]] != "" && now[vips[0]] != now[vips[1]]
			if !spread || fmt.Sprint(now) != fmt.Sprint(h) {
				h, since = now, time.Now()
				return false, fmt.Sprintf("holders %v", now)
			}
			return time.Since(since) > 2*time.Second, fmt.Sprintf("holders %v", now)
		})
		stay, moving := vips[0], vips[1]
		keeper, leaver := h[stay], h[moving]
		pods := &corev1.PodList{}
		must(t, u.Client.List(ctx, pods, client.InNamespace(names.Namespace), client.MatchingLabels(names.RouterSelector("edge"))))
		var victim *corev1.Pod
		for i := range pods.Items {
			if pods.Items[i].Spec.NodeName == leaver {
				victim = &pods.Items[i]
			}
		}
		if victim == nil {
			t.Fatalf("no edge router on %s", leaver)
		}
		stop := loopHTTP(ctx, t, in.Fabric, stay, host)
		// Cordon the leaver and delete its router: the Deployment brings one up on the third node.
		cordon := func(unschedulable bool) {
			update(ctx, t, u.Client, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: leaver}},
				func(n *corev1.Node) { n.Spec.Unschedulable = unschedulable })
		}
		cordon(true)
		defer cordon(false)
		must(t, u.Client.Delete(ctx, victim, client.GracePeriodSeconds(1)))
		var newNode string
		eventually(ctx, t, 3*time.Minute, func() (bool, string) {
			h := holders()
			for _, n := range in.Nodes {
				if n.Name != keeper && n.Name != leaver && h[moving] == n.Name {
					newNode = n.Name
				}
			}
			return newNode != "" && h[stay] == keeper, fmt.Sprintf("holders %v: want %s on %s and %s on the third node", h, stay, keeper, moving)
		})
		n, failed := stop()
		t.Logf("router moved %s → %s; %s stayed on %s: %d requests, %d failed", leaver, newNode, stay, keeper, n, failed)
		if failed > 0 || n < 20 {
			t.Errorf("the VIP that stayed failed %d of %d requests while the peers changed", failed, n)
		}
		cm := &corev1.ConfigMap{}
		must(t, u.Client.Get(ctx, client.ObjectKey{Namespace: names.Namespace, Name: render.VIPConfigName("edge")}, cm))
		if conf := cm.Data["keepalived.conf"]; !strings.Contains(conf, "@"+newNode+" ") || strings.Contains(conf, "@"+leaver+" ") {
			t.Errorf("peers not re-rendered (want %s, not %s):\n%s", newNode, leaver, conf)
		}
	})
	// Last: after its link comes back, the harness' forwarded path from that node to the API
	// server stays broken (a harness artifact: the API server is reached through a forwarder in
	// the node's namespace), so that node's agent cannot report again.
	t.Run("a node whose link goes down loses its VIP to the other node", func(t *testing.T) {
		// The hung router was resumed: its node takes its VIP back (it is the VIP's home).
		waitHeld(t, time.Minute)
		v := vips[1]
		from := nodeByName(holders()[v])
		start := time.Now()
		must(t, from.SetLink(false))
		defer func() { _ = from.SetLink(true) }()
		// The other node's router answers on the VIP; status names it the holder.
		answered(t, v, start, false)
		t.Logf("link down on %s: %s answered again after %s", from.Name, v, time.Since(start).Round(10*time.Millisecond))
		eventually(ctx, t, 20*time.Second, func() (bool, string) {
			h := holders()[v]
			return h != "" && h != from.Name, fmt.Sprintf("status holder of %s: %q", v, h)
		})
		must(t, from.SetLink(true))
	})
}

// TestVIP runs VIPSpec for every router flavour, one after another (failover is timed: the
// flavours do not share the machine's two cores), each in a user cluster of its own.
func TestVIP(t *testing.T) {
	flavours := render.Flavours()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(len(flavours))*8*time.Minute)
	defer cancel()
	nodes := make([][]framework.RealNodeSpec, len(flavours))
	for i := range flavours {
		nodes[i] = []framework.RealNodeSpec{{Name: "n1"}, {Name: "n2"}, {Name: "n3"}}
	}
	env := framework.StartEnvironment(t, framework.EnvironmentOptions{UserClusters: len(flavours), DNS: true, RealNodes: nodes})
	framework.StartController(t, env.Seed, "--dns-zone="+env.DNS.Zone)
	for i, f := range flavours {
		t.Run(string(f.Name()), func(t *testing.T) {
			VIPSpec(ctx, t, func() VIPSpecInput {
				return VIPSpecInput{Seed: env.Seed, User: env.Users[i], DNS: env.DNS, Fabric: env.Fabrics[i], Nodes: env.Nodes[i],
					Flavour: f, ClusterID: fmt.Sprintf("v%d", i+1), FirstVIP: 100 + 10*i}
			})
		})
	}
}

// loopHTTP sends GET http://addr/ with Host host from the client namespace every 50 ms (300 ms
// timeout) until stop, which reports how many were sent and how many failed.
// loopHTTP requests addr every 50 ms until stopped and counts the requests and the failures: no
// connection within 300 ms (nothing holds the address, or nothing listens), no answer within 1 s,
// or not the app's answer. A connection made but answered late (a router starved of CPU for a
// moment while pods start beside it) is logged apart: the address was held.
func loopHTTP(ctx context.Context, t testing.TB, f *framework.Fabric, addr, host string) func() (int, int) {
	said := 0
	return loop(ctx, 50*time.Millisecond, func(ctx context.Context, _ int) (bool, bool) {
		start := time.Now()
		code, body, err := f.GetWithin(ctx, addr+":80", host, 300*time.Millisecond, time.Second)
		failed := err != nil || code != 200 || !strings.Contains(body, "hello from web")
		slow := !failed && time.Since(start) > 300*time.Millisecond
		// The first failures and slow answers say why and when.
		if (failed || slow) && ctx.Err() == nil && said < 5 {
			said++
			t.Logf("%s %s: %d %q %v (after %s)", start.Format("15:04:05.000"), addr, code, body, err,
				time.Since(start).Round(time.Millisecond))
		}
		return true, failed
	})
}

// tokenMounts names the containers of p that mount a ServiceAccount token, or says the pod
// automounts one or has a token volume besides the rendered kube-api-access.
func tokenMounts(p corev1.Pod) string {
	if p.Spec.AutomountServiceAccountToken == nil || *p.Spec.AutomountServiceAccountToken {
		return "automounted"
	}
	tokens := map[string]bool{}
	for _, v := range p.Spec.Volumes {
		if v.Projected != nil && slices.ContainsFunc(v.Projected.Sources, func(s corev1.VolumeProjection) bool { return s.ServiceAccountToken != nil }) {
			tokens[v.Name] = true
		}
	}
	if len(tokens) != 1 || !tokens["kube-api-access"] {
		return fmt.Sprintf("token volumes %v", tokens)
	}
	var with []string
	for _, c := range append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...) {
		if slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return tokens[m.Name] }) {
			with = append(with, c.Name)
		}
	}
	return strings.Join(with, " ")
}

// vipProcess is a process of a VIP router pod as the machine runs it.
type vipProcess struct {
	pid   int
	cmd   string
	uid   string // real uid
	token bool   // the ServiceAccount token is at the in-cluster path of its mount namespace
}

// vipProcesses lists the running VIP agents of shard and every keepalived and keepalived
// supervisor on the machine (the harness's nodes share its PID namespace).
func vipProcesses(t *testing.T, shard string) (agents, keepaliveds []vipProcess) {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || len(raw) == 0 {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		base := filepath.Base(args[0])
		agent := base == "shardgate-vip-agent" && slices.Contains(args, "--shard="+shard)
		keepalived := base == "keepalived" || (base == "shardgate-vip-agent" && len(args) > 1 && args[1] == "keepalived")
		if !agent && !keepalived {
			continue
		}
		p := vipProcess{pid: pid, cmd: strings.Join(args, " ")}
		if status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
			for _, line := range strings.Split(string(status), "\n") {
				if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" {
					p.uid = f[1]
				}
			}
		}
		_, err = os.Stat(fmt.Sprintf("/proc/%d/root/var/run/secrets/kubernetes.io/serviceaccount/token", pid))
		p.token = err == nil
		if agent {
			agents = append(agents, p)
		} else {
			keepaliveds = append(keepaliveds, p)
		}
	}
	return agents, keepaliveds
}
