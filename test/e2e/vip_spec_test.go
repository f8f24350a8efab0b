package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/test/framework"
)

// VIPSpecInput: a seed with BIND and external-dns, one user cluster with two real nodes on one
// L2 segment (the fabric), and the controller.
type VIPSpecInput struct {
	Seed   *framework.ControlPlane
	User   *framework.ControlPlane
	DNS    *framework.DNSServer
	Fabric *framework.Fabric
	Nodes  []*framework.RealNode
}

// VIPSpec proves VIP shards end to end: the seed allocates two VIPs from the pool, routers run
// with keepalived beside them (real kubelets, the rendered spec), the VIPs are mastered on
// different nodes and reported as observed, DNS answers exactly the VIPs, HTTP through each
// returns 200, and a router that stops answering or a node whose link goes down loses its VIP
// to the other node.
func VIPSpec(ctx context.Context, t *testing.T, inputGetter func() VIPSpecInput) {
	in := inputGetter()
	seed, u, zone := in.Seed, in.User, in.DNS.Zone
	sel := map[string]string{"vip": "yes"}
	edge := realRouter(v1alpha1.ShardSpec{Name: "edge", Replicas: ptr.To[int32](2), Publishing: v1alpha1.PublishVIP,
		VIP: &v1alpha1.VIPSettings{Pool: []string{"10.123.0.100-10.123.0.109"}, Count: 2, Image: framework.KeepalivedImage,
			AdvertInterval: &metav1.Duration{Duration: 100 * time.Millisecond}}})
	createProfile(ctx, t, seed, "vip", sel, v1alpha1.DNSSettings{TTL: 5}, realRouter(v1alpha1.ShardSpec{Name: v1alpha1.DefaultShardName}), edge)
	must(t, framework.DeployBackend(ctx, u, "default", "web", 1))
	host := "app.edge.v1." + zone
	must(t, u.Client.Create(ctx, shardIngress("web", host)))
	kc, err := u.RestrictedKubeconfig(ctx, "shardgate-vip", "config/user-cluster/rbac.yaml")
	must(t, err)
	putKubeconfigSecret(ctx, t, seed, "default", "v1", "v1", kc, sel)
	k := key("v1")

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
	if !t.Run("two VIPs allocated, mastered on different nodes, answered by DNS and HTTP", func(t *testing.T) {
		waitCondition(ctx, t, seed, k, v1alpha1.ConditionVIPsAvailable, metav1.ConditionTrue, v1alpha1.ReasonVIPsHeld)
		h := holders()
		for a := range h {
			vips = append(vips, a)
		}
		slices.Sort(vips)
		if len(vips) != 2 || h[vips[0]] == h[vips[1]] {
			t.Fatalf("VIPs and holders %v: want two VIPs on different nodes", h)
		}
		t.Logf("VIPs: %s on %s, %s on %s", vips[0], h[vips[0]], vips[1], h[vips[1]])
		waitAnswer(ctx, t, in.DNS, host, framework.AnswerIs(vips...))
		waitAnswer(ctx, t, in.DNS, "edge.v1."+zone, framework.AnswerIs(vips...))
		for _, v := range vips {
			eventually(ctx, t, 30*time.Second, func() (bool, string) {
				code, body := fabricGet(ctx, in.Fabric, v, host)
				return code == 200 && strings.Contains(body, "hello from web"), fmt.Sprintf("http://%s (%s): %d %q", v, host, code, body)
			})
		}
		// The observed holder really has the address: on its interface, not on the other.
		for _, v := range vips {
			for _, n := range in.Nodes {
				out, err := n.Exec(ctx, "ip", "-4", "-o", "addr", "show", "dev", "eth0")
				must(t, err)
				if has := strings.Contains(string(out), " "+v+"/"); has != (h[v] == n.Name) {
					t.Errorf("%s on %s: %v, status says the holder is %s", v, n.Name, has, h[v])
				}
			}
		}
	}) {
		return
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
		procs, err := framework.ProcessesWithArg("--providers.kubernetesingress.ingressendpoint.hostname=edge.v1." + zone)
		must(t, err)
		stopped := 0
		start := time.Now()
		for _, p := range procs {
			if from.Runs(p.PID) {
				// SIGSTOP: the router is there but answers nothing (a hung process).
				must(t, syscallStop(p.PID))
				defer func() { _ = syscallCont(p.PID) }()
				stopped++
			}
		}
		if stopped != 1 {
			t.Fatalf("%d router processes on %s", stopped, from.Name)
		}
		eventually(ctx, t, 20*time.Second, func() (bool, string) {
			code, body := fabricGet(ctx, in.Fabric, v, host)
			return code == 200, fmt.Sprintf("http://%s: %d %q", v, code, body)
		})
		t.Logf("router hung on %s: %s answered again after %s", from.Name, v, time.Since(start).Round(10*time.Millisecond))
		eventually(ctx, t, 20*time.Second, func() (bool, string) {
			h := holders()[v]
			return h != "" && h != from.Name, fmt.Sprintf("status holder of %s: %q", v, h)
		})
	})

	t.Run("a node whose link goes down loses its VIP to the other node", func(t *testing.T) {
		// Wait for the hung router's return (it was resumed) and VIPs to settle.
		waitCondition(ctx, t, seed, k, v1alpha1.ConditionVIPsAvailable, metav1.ConditionTrue, v1alpha1.ReasonVIPsHeld)
		v := vips[1]
		from := nodeByName(holders()[v])
		start := time.Now()
		must(t, from.SetLink(false))
		defer func() { _ = from.SetLink(true) }()
		eventually(ctx, t, 20*time.Second, func() (bool, string) {
			code, body := fabricGet(ctx, in.Fabric, v, host)
			return code == 200, fmt.Sprintf("http://%s: %d %q", v, code, body)
		})
		t.Logf("link down on %s: %s answered again after %s", from.Name, v, time.Since(start).Round(10*time.Millisecond))
		must(t, from.SetLink(true))
	})
}

func TestVIP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	env := framework.StartEnvironment(t, framework.EnvironmentOptions{UserClusters: 1, DNS: true,
		RealNodes: [][]framework.RealNodeSpec{{{Name: "n1"}, {Name: "n2"}}}})
	framework.StartController(t, env.Seed, "--dns-zone="+env.DNS.Zone)
	VIPSpec(ctx, t, func() VIPSpecInput {
		return VIPSpecInput{Seed: env.Seed, User: env.Users[0], DNS: env.DNS, Fabric: env.Fabrics[0], Nodes: env.Nodes[0]}
	})
}
