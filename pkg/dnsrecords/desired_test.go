package dnsrecords

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

type nodeOpt func(*corev1.Node)

func node(name string, opts ...nodeOpt) corev1.Node {
	n := corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	for _, o := range opts {
		o(&n)
	}
	return n
}

func addr(t corev1.NodeAddressType, ip string) nodeOpt {
	return func(n *corev1.Node) {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: t, Address: ip})
	}
}
func internal(ip string) nodeOpt { return addr(corev1.NodeInternalIP, ip) }
func external(ip string) nodeOpt { return addr(corev1.NodeExternalIP, ip) }
func notReady(n *corev1.Node)    { n.Status.Conditions[0].Status = corev1.ConditionFalse }
func noCondition(n *corev1.Node) { n.Status.Conditions = nil }
func cordoned(n *corev1.Node)    { n.Spec.Unschedulable = true }
func deleting(n *corev1.Node)    { now := metav1.Now(); n.DeletionTimestamp = &now }
func taint(e corev1.TaintEffect) nodeOpt {
	return func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "k", Effect: e}) }
}
func label(k, v string) nodeOpt { return func(n *corev1.Node) { n.Labels[k] = v } }

func defaults() Settings {
	return Settings{TTL: 60, AddressTypes: []corev1.NodeAddressType{corev1.NodeExternalIP, corev1.NodeInternalIP},
		IPv4: true, IPv6: true, EmptyTargets: v1alpha1.EmptyTargetsKeepLast}
}

func a(name string, targets ...string) Endpoint {
	return Endpoint{DNSName: name, RecordType: RecordTypeA, RecordTTL: 60, Targets: targets}
}
func aaaa(name string, targets ...string) Endpoint {
	return Endpoint{DNSName: name, RecordType: RecordTypeAAAA, RecordTTL: 60, Targets: targets}
}

func TestDesired(t *testing.T) {
	const d = "c1.example.test"
	const w = "*.c1.example.test"
	ingressOnly := defaults()
	ingressOnly.IngressNodes = labels.SelectorFromSet(labels.Set{"ingress": "true"})
	internalFirst := defaults()
	internalFirst.AddressTypes = []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP}
	v4only := defaults()
	v4only.IPv6 = false
	remove := defaults()
	remove.EmptyTargets = v1alpha1.EmptyTargetsRemove
	ttl := defaults()
	ttl.TTL = 300
	previous := []Endpoint{a(w, "10.9.9.9"), a(d, "10.9.9.9")}

	tests := []struct {
		name      string
		nodes     []corev1.Node
		settings  Settings
		current   []Endpoint
		want      []Endpoint
		wantNodes []string
		keptLast  bool
	}{
		{name: "two ready nodes, internal only",
			nodes:     []corev1.Node{node("n2", internal("10.0.0.2")), node("n1", internal("10.0.0.1"))},
			settings:  defaults(),
			want:      []Endpoint{a(w, "10.0.0.1", "10.0.0.2"), a(d, "10.0.0.1", "10.0.0.2")},
			wantNodes: []string{"n1", "n2"}},
		{name: "external preferred over internal",
			nodes:     []corev1.Node{node("n1", internal("10.0.0.1"), external("192.0.2.1"))},
			settings:  defaults(),
			want:      []Endpoint{a(w, "192.0.2.1"), a(d, "192.0.2.1")},
			wantNodes: []string{"n1"}},
		{name: "preference order is the profile's",
			nodes:     []corev1.Node{node("n1", internal("10.0.0.1"), external("192.0.2.1"))},
			settings:  internalFirst,
			want:      []Endpoint{a(w, "10.0.0.1"), a(d, "10.0.0.1")},
			wantNodes: []string{"n1"}},
		{name: "ipv6 addresses give AAAA records",
			nodes:     []corev1.Node{node("n1", internal("10.0.0.1"), internal("2001:db8::1"))},
			settings:  defaults(),
			want:      []Endpoint{a(w, "10.0.0.1"), aaaa(w, "2001:db8::1"), a(d, "10.0.0.1"), aaaa(d, "2001:db8::1")},
			wantNodes: []string{"n1"}},
		{name: "ipv6 excluded by family setting",
			nodes:     []corev1.Node{node("n1", internal("10.0.0.1"), internal("2001:db8::1"))},
			settings:  v4only,
			want:      []Endpoint{a(w, "10.0.0.1"), a(d, "10.0.0.1")},
			wantNodes: []string{"n1"}},
		{name: "not ready, cordoned, deleting, NoExecute and condition-less nodes are left out",
			nodes: []corev1.Node{
				node("ok", internal("10.0.0.1")),
				node("notready", internal("10.0.0.2"), notReady),
				node("cordoned", internal("10.0.0.3"), cordoned),
				node("deleting", internal("10.0.0.4"), deleting),
				node("noexecute", internal("10.0.0.5"), taint(corev1.TaintEffectNoExecute)),
				node("nocondition", internal("10.0.0.6"), noCondition),
				node("noschedule-taint-is-fine", internal("10.0.0.7"), taint(corev1.TaintEffectNoSchedule)),
			},
			settings:  defaults(),
			want:      []Endpoint{a(w, "10.0.0.1", "10.0.0.7"), a(d, "10.0.0.1", "10.0.0.7")},
			wantNodes: []string{"noschedule-taint-is-fine", "ok"}},
		{name: "ingress node selector",
			nodes:     []corev1.Node{node("n1", internal("10.0.0.1"), label("ingress", "true")), node("n2", internal("10.0.0.2"))},
			settings:  ingressOnly,
			want:      []Endpoint{a(w, "10.0.0.1"), a(d, "10.0.0.1")},
			wantNodes: []string{"n1"}},
		{name: "node without usable address is not a target",
			nodes:     []corev1.Node{node("n1", addr(corev1.NodeHostName, "n1")), node("n2", internal("not-an-ip")), node("n3", internal("10.0.0.3"))},
			settings:  defaults(),
			want:      []Endpoint{a(w, "10.0.0.3"), a(d, "10.0.0.3")},
			wantNodes: []string{"n3"}},
		{name: "duplicate addresses collapse",
			nodes:     []corev1.Node{node("n1", internal("10.0.0.1")), node("n2", internal("10.0.0.1"))},
			settings:  defaults(),
			want:      []Endpoint{a(w, "10.0.0.1"), a(d, "10.0.0.1")},
			wantNodes: []string{"n1", "n2"}},
		{name: "ttl from settings",
			nodes:     []corev1.Node{node("n1", internal("10.0.0.1"))},
			settings:  ttl,
			want:      []Endpoint{{DNSName: w, RecordType: "A", RecordTTL: 300, Targets: []string{"10.0.0.1"}}, {DNSName: d, RecordType: "A", RecordTTL: 300, Targets: []string{"10.0.0.1"}}},
			wantNodes: []string{"n1"}},
		{name: "no ready node keeps the last records (KeepLast)",
			nodes:    []corev1.Node{node("n1", internal("10.0.0.1"), notReady)},
			settings: defaults(), current: previous,
			want: previous, keptLast: true},
		{name: "no ready node and nothing published: nothing to keep",
			nodes:    nil,
			settings: defaults(),
			want:     nil},
		{name: "no ready node removes records (Remove)",
			nodes:    []corev1.Node{node("n1", internal("10.0.0.1"), notReady)},
			settings: remove, current: previous,
			want: nil},
		{name: "ready nodes replace the previous records",
			nodes:    []corev1.Node{node("n1", internal("10.0.0.1"))},
			settings: defaults(), current: previous,
			want: []Endpoint{a(w, "10.0.0.1"), a(d, "10.0.0.1")}, wantNodes: []string{"n1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Desired(Input{Shards: []ShardInput{{Name: "default", Domain: d, Nodes: tt.nodes}}, Settings: tt.settings, Current: tt.current})
			if !Equal(p.Endpoints, tt.want) || len(p.Endpoints) != len(tt.want) {
				t.Errorf("endpoints:\n got %+v\nwant %+v", p.Endpoints, tt.want)
			}
			if !slices.Equal(p.ReadyNodes, tt.wantNodes) {
				t.Errorf("ready nodes: got %v want %v", p.ReadyNodes, tt.wantNodes)
			}
			if p.KeptLast != tt.keptLast {
				t.Errorf("keptLast: got %v want %v", p.KeptLast, tt.keptLast)
			}
			if !slices.Equal(p.Targets, Targets(tt.want)) {
				t.Errorf("targets: got %v want %v", p.Targets, Targets(tt.want))
			}
		})
	}
}

func TestDesiredIsDeterministic(t *testing.T) {
	nodes := []corev1.Node{node("b", internal("10.0.0.2"), internal("2001:db8::2")), node("a", internal("10.0.0.1"), internal("2001:db8::1"))}
	rev := []corev1.Node{nodes[1], nodes[0]}
	p1 := Desired(Input{Shards: []ShardInput{{Domain: "c.z", Nodes: nodes}}, Settings: defaults()})
	p2 := Desired(Input{Shards: []ShardInput{{Domain: "c.z", Nodes: rev}}, Settings: defaults()})
	if !slices.EqualFunc(p1.Endpoints, p2.Endpoints, func(x, y Endpoint) bool { return Equal([]Endpoint{x}, []Endpoint{y}) && x.DNSName == y.DNSName }) {
		t.Fatalf("order of nodes changed the result:\n%+v\n%+v", p1.Endpoints, p2.Endpoints)
	}
}

func TestEqual(t *testing.T) {
	x := []Endpoint{a("b", "2", "1"), a("a", "1")}
	y := []Endpoint{a("a", "1"), a("b", "1", "2")}
	if !Equal(x, y) {
		t.Error("order should not matter")
	}
	if Equal(x, []Endpoint{a("a", "1"), a("b", "1", "3")}) {
		t.Error("different targets compare equal")
	}
	if Equal(x, x[:1]) {
		t.Error("different lengths compare equal")
	}
	z := []Endpoint{a("a", "1"), a("b", "1", "2")}
	z[0].RecordTTL = 5
	if Equal(y, z) {
		t.Error("different TTL compare equal")
	}
}

func TestDesiredShards(t *testing.T) {
	const d = "c1.z"
	n1, n2 := node("n1", internal("10.0.0.1")), node("n2", internal("10.0.0.2"))
	current := []Endpoint{a("*.edge.c1.z", "10.9.9.9"), a("edge.c1.z", "10.9.9.9"), a("*.c1.z", "10.0.0.1"), a("c1.z", "10.0.0.1")}
	p := Desired(Input{Settings: defaults(), Current: current, Shards: []ShardInput{
		{Name: "default", Domain: d, Nodes: []corev1.Node{n1, n2}},
		{Name: "edge", Domain: "edge." + d}, // no targets now: keeps its last records
		{Name: "lb", Domain: "lb." + d, LoadBalancer: true, LoadBalancerIPs: []string{"192.0.2.7"}, LoadBalancerHostnames: []string{"ignored.example"}},
		{Name: "cname", Domain: "cname." + d, LoadBalancer: true, LoadBalancerHostnames: []string{"lb-123.example.com"}},
		{Name: "pending", Domain: "pending." + d, LoadBalancer: true},
	}})
	cname := func(name, target string) Endpoint {
		return Endpoint{DNSName: name, RecordType: RecordTypeCNAME, RecordTTL: 60, Targets: []string{target}}
	}
	want := []Endpoint{
		a("*.c1.z", "10.0.0.1", "10.0.0.2"), a("c1.z", "10.0.0.1", "10.0.0.2"),
		a("*.edge.c1.z", "10.9.9.9"), a("edge.c1.z", "10.9.9.9"),
		a("*.lb.c1.z", "192.0.2.7"), a("lb.c1.z", "192.0.2.7"),
		cname("*.cname.c1.z", "lb-123.example.com"), cname("cname.c1.z", "lb-123.example.com"),
	}
	if !Equal(p.Endpoints, want) || len(p.Endpoints) != len(want) {
		t.Fatalf("endpoints:\n got %+v\nwant %+v", p.Endpoints, want)
	}
	if !p.KeptLast || !p.Shards[1].KeptLast || p.Shards[0].KeptLast || len(p.Shards[4].Targets) != 0 {
		t.Fatalf("per-shard keep-last: %+v", p.Shards)
	}
	if !slices.Equal(p.ReadyNodes, []string{"n1", "n2"}) {
		t.Fatalf("ready nodes %v", p.ReadyNodes)
	}
}

// The nodes a shard's answer leaves out are named with why, by name and at most
// MaxNodesLeftOut: the operator's cue (doctor) that a cordon or a sick node took addresses out.
func TestDesiredSaysWhyNodesAreLeftOut(t *testing.T) {
	ingressOnly := defaults()
	ingressOnly.IngressNodes = labels.SelectorFromSet(labels.Set{"ingress": "true"})
	in := func(n ...corev1.Node) []corev1.Node { return n }
	sel := label("ingress", "true")
	p := Desired(Input{Settings: ingressOnly, Shards: []ShardInput{{Name: "default", Domain: "c1.z", Nodes: in(
		node("ok", internal("10.0.0.1"), sel),
		node("c-cordoned", internal("10.0.0.3"), sel, cordoned),
		node("b-notready", internal("10.0.0.2"), sel, notReady),
		node("d-deleting", internal("10.0.0.4"), sel, deleting, cordoned),
		node("e-noexecute", internal("10.0.0.5"), sel, taint(corev1.TaintEffectNoExecute)),
		node("f-unselected", internal("10.0.0.6")),
		node("g-noaddress", addr(corev1.NodeHostName, "g"), sel),
		node("h-nocondition", internal("10.0.0.8"), sel, noCondition),
	)}}})
	// The most pressing first; a node the profile does not select for ingress is no finding.
	want := []v1alpha1.NodeLeftOut{{Name: "b-notready", Reason: v1alpha1.NodeNotReady},
		{Name: "h-nocondition", Reason: v1alpha1.NodeNotReady}, {Name: "d-deleting", Reason: v1alpha1.NodeDeleting},
		{Name: "c-cordoned", Reason: v1alpha1.NodeCordoned}, {Name: "e-noexecute", Reason: v1alpha1.NodeNoExecuteTaint},
		{Name: "g-noaddress", Reason: v1alpha1.NodeNoAddress}}
	if got := p.Shards[0].LeftOut; !slices.Equal(got, want) || !slices.Equal(p.Shards[0].ReadyNodes, []string{"ok"}) ||
		p.Shards[0].LeftOutCount != len(want) {
		t.Fatalf("left out %+v (%d), ready %v; want %+v and [ok]", got, p.Shards[0].LeftOutCount, p.Shards[0].ReadyNodes, want)
	}

	// Router nodes: a healthy node whose router is not ready is no node's fault (doctor's router
	// finding says it); a router on a node the profile does not select for ingress is named.
	p = Desired(Input{Settings: ingressOnly, Shards: []ShardInput{{Name: "default", Domain: "c1.z",
		Nodes: in(node("ok", internal("10.0.0.1"), sel)),
		RouterNodes: in(node("ok", internal("10.0.0.1"), sel), node("healthy-unready-router", internal("10.0.0.2"), sel),
			node("stray", internal("10.0.0.3")), node("dead", internal("10.0.0.4"), sel, notReady))}}})
	want = []v1alpha1.NodeLeftOut{{Name: "dead", Reason: v1alpha1.NodeNotReady}, {Name: "stray", Reason: v1alpha1.NodeNotSelected}}
	if got := p.Shards[0].LeftOut; !slices.Equal(got, want) {
		t.Fatalf("router nodes left out %+v, want %+v", got, want)
	}

	var many []corev1.Node
	for i := range v1alpha1.MaxNodesLeftOut + 5 {
		many = append(many, node(fmt.Sprintf("n%02d", i), internal("10.0.1.1"), cordoned))
	}
	p = Desired(Input{Settings: defaults(), Shards: []ShardInput{{Name: "np", Domain: "np.c1.z", Nodes: many}}})
	if got := p.Shards[0].LeftOut; len(got) != v1alpha1.MaxNodesLeftOut || got[0].Name != "n00" ||
		p.Shards[0].LeftOutCount != len(many) {
		t.Fatalf("%d nodes cordoned: left out %+v, want the first %d by name", len(many), got, v1alpha1.MaxNodesLeftOut)
	}
}
