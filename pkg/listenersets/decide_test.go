package listenersets

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/pkg/names"
)

func set(ns, name string, age int, listeners ...gatewayv1.ListenerEntry) gatewayv1.ListenerSet {
	return gatewayv1.ListenerSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 2,
			CreationTimestamp: metav1.NewTime(time.Unix(int64(1000+age), 0))},
		Spec: gatewayv1.ListenerSetSpec{ParentRef: gatewayv1.ParentGatewayReference{Name: names.ParentGatewayName,
			Namespace: ptr.To(gatewayv1.Namespace(names.Namespace))}, Listeners: listeners}}
}

func httpsL(name, host string, refs ...gatewayv1.SecretObjectReference) gatewayv1.ListenerEntry {
	return gatewayv1.ListenerEntry{Name: gatewayv1.SectionName(name), Hostname: ptr.To(gatewayv1.Hostname(host)),
		Port: PortHTTPS, Protocol: gatewayv1.HTTPSProtocolType,
		TLS: &gatewayv1.ListenerTLSConfig{Mode: ptr.To(gatewayv1.TLSModeTerminate), CertificateRefs: refs}}
}

func httpL(name, host string) gatewayv1.ListenerEntry {
	return gatewayv1.ListenerEntry{Name: gatewayv1.SectionName(name), Hostname: ptr.To(gatewayv1.Hostname(host)),
		Port: PortHTTP, Protocol: gatewayv1.HTTPProtocolType}
}

func secret(name string) gatewayv1.SecretObjectReference {
	return gatewayv1.SecretObjectReference{Name: gatewayv1.ObjectName(name)}
}

// cond is a listener's condition of type t in set ns/name's status.
func cond(t *testing.T, d Decision, ns, name, listener, typ string) metav1.Condition {
	t.Helper()
	st, ok := d.Status[types.NamespacedName{Namespace: ns, Name: name}]
	if !ok {
		t.Fatalf("no status for %s/%s", ns, name)
	}
	for _, l := range st.Listeners {
		if string(l.Name) != listener {
			continue
		}
		for _, c := range l.Conditions {
			if c.Type == typ {
				return c
			}
		}
	}
	t.Fatalf("%s/%s listener %s has no %s", ns, name, listener, typ)
	return metav1.Condition{}
}

func TestDecide(t *testing.T) {
	holders := map[string]Holder{"app.a.example": {Namespace: "a", Shard: "s1", Routes: 2},
		"b.example": {Namespace: "b", Shard: "s1", Routes: 1}, "h.example": {Namespace: "a", Shard: "hap"}}
	in := Input{Holders: holders, Gateways: map[string]bool{"s1": true}, ClusterDomain: "c1.zone.test",
		Sets: []gatewayv1.ListenerSet{
			set("a", "web", 0, httpsL("https", "app.a.example", secret("app-tls")), httpL("http", "app.a.example"),
				httpsL("theirs", "b.example", secret("app-tls")), httpL("later", "new.a.example"),
				httpsL("other-ns", "app.a.example", gatewayv1.SecretObjectReference{Name: "x", Namespace: ptr.To(gatewayv1.Namespace("b"))}),
				httpL("wild", "*.a.example"), httpL("ours", "x.c1.zone.test"),
				gatewayv1.ListenerEntry{Name: "port", Hostname: ptr.To(gatewayv1.Hostname("app.a.example")), Port: 8080,
					Protocol: gatewayv1.HTTPProtocolType},
				gatewayv1.ListenerEntry{Name: "tcp", Port: 80, Protocol: gatewayv1.TCPProtocolType},
				httpL("haproxy", "h.example")),
			// Younger, same namespace and host: conflicts with the older listener.
			set("a", "again", 5, httpL("http", "app.a.example")),
			// Another parent: not Shardgate's to decide.
			func() gatewayv1.ListenerSet {
				s := set("a", "elsewhere", 0, httpL("http", "app.a.example"))
				s.Spec.ParentRef.Name = "someone-elses"
				return s
			}(),
		}}
	d := Decide(in)

	got := d.Listeners["s1"]
	if len(got) != 2 || got[0].Hostname != "app.a.example" || !got[0].HTTPS || got[0].Secrets[0] != "app-tls" ||
		got[1].HTTPS || got[0].Namespace != "a" || got[0].Name != ListenerName("a", "web", "https") {
		t.Fatalf("s1's listeners = %+v, want a's HTTPS and HTTP for app.a.example", got)
	}
	if len(d.Listeners) != 1 {
		t.Errorf("listeners on %d Gateways, want s1's only: %+v", len(d.Listeners), d.Listeners)
	}
	if g := d.Grants["a"]; len(g) != 1 || g[0] != "app-tls" || len(d.Grants) != 1 {
		t.Errorf("grants = %v, want a's app-tls only (b's Secret is never granted)", d.Grants)
	}
	if _, ok := d.Status[types.NamespacedName{Namespace: "a", Name: "elsewhere"}]; ok {
		t.Error("a ListenerSet of another parent got Shardgate's status")
	}
	for _, c := range []struct{ listener, typ, status, reason string }{
		{"https", "Programmed", "True", "Programmed"},
		{"https", "Conflicted", "False", "NoConflicts"},
		{"theirs", "Conflicted", "True", "HostnameConflict"},
		{"theirs", "Programmed", "False", "HostnameConflict"},
		{"later", "Accepted", "True", "Accepted"},
		{"later", "Programmed", "False", ReasonHostnameNotHeld},
		{"other-ns", "ResolvedRefs", "False", "RefNotPermitted"},
		{"wild", "Accepted", "False", ReasonHostnameRequired},
		{"ours", "Accepted", "False", ReasonHostnameNotAllowed},
		{"port", "Accepted", "False", "PortUnavailable"},
		{"tcp", "Accepted", "False", "UnsupportedProtocol"},
		{"haproxy", "Programmed", "False", ReasonNoGateway},
	} {
		got := cond(t, d, "a", "web", c.listener, c.typ)
		if string(got.Status) != c.status || got.Reason != c.reason || got.ObservedGeneration != 2 {
			t.Errorf("%s %s = %s/%s (gen %d), want %s/%s", c.listener, c.typ, got.Status, got.Reason,
				got.ObservedGeneration, c.status, c.reason)
		}
	}
	if c := cond(t, d, "a", "web", "theirs", "Conflicted"); strings.Contains(c.Message, "b") && strings.Contains(c.Message, "namespace b") {
		t.Errorf("the conflict names the other namespace: %q", c.Message)
	}
	if c := cond(t, d, "a", "again", "http", "Conflicted"); c.Status != "True" || c.Reason != "ListenerConflict" {
		t.Errorf("the younger set's listener for the same host = %+v, want ListenerConflict", c)
	}
	st := d.Status[types.NamespacedName{Namespace: "a", Name: "web"}]
	if st.Listeners[0].AttachedRoutes != 2 {
		t.Errorf("attachedRoutes = %d, want the host's 2 HTTPRoutes", st.Listeners[0].AttachedRoutes)
	}
	if st.Conditions[0].Status != "True" || st.Conditions[1].Status != "False" || st.Conditions[1].Reason != "Pending" {
		t.Errorf("set conditions = %+v, want Accepted and Programmed=False/Pending", st.Conditions)
	}
}

func TestAGatewayTakesAtMostItsListeners(t *testing.T) {
	in := Input{Holders: map[string]Holder{}, Gateways: map[string]bool{"s1": true}}
	var sets []gatewayv1.ListenerSet
	for i := range MaxPerGateway + 3 {
		host := "h" + strings.Repeat("x", i) + ".example"
		ns := string(rune('a' + i%5)) // five namespaces, 13 listeners each: none reaches its share
		in.Holders[host] = Holder{Namespace: ns, Shard: "s1"}
		sets = append(sets, set(ns, "set"+host, i, httpL("http", host)))
	}
	in.Sets = sets
	d := Decide(in)
	if n := len(d.Listeners["s1"]); n != MaxPerGateway {
		t.Fatalf("%d listeners on s1's Gateway, want %d", n, MaxPerGateway)
	}
	last := sets[len(sets)-1]
	if c := cond(t, d, last.Namespace, last.Name, "http", "Accepted"); c.Reason != "TooManyListeners" {
		t.Errorf("the youngest set's listener = %+v, want TooManyListeners", c)
	}
	if c := cond(t, d, "a", sets[0].Name, "http", "Programmed"); c.Status != "True" {
		t.Errorf("the oldest set's listener = %+v, want programmed (oldest first)", c)
	}
}

func TestHolders(t *testing.T) {
	routes := []Route{
		{Namespace: "a", Shard: "s1", Hosts: []string{"x.example", "y.example"}, GatewayRoute: true},
		{Namespace: "a", Shard: "s1", Hosts: []string{"x.example"}},
		{Namespace: "a", Shard: "s1", Hosts: []string{"z.example"}, GatewayRoute: true},
		{Namespace: "b", Shard: "s1", Hosts: []string{"z.example"}, GatewayRoute: true},
	}
	h := Holders(routes, map[string]bool{"x.example": true, "z.example": true})
	if h["x.example"] != (Holder{Namespace: "a", Shard: "s1", Routes: 1}) {
		t.Errorf("x = %+v", h["x.example"])
	}
	if _, ok := h["y.example"]; ok {
		t.Error("a host no ListenerSet names was gathered")
	}
	if h["z.example"].Namespace != "" {
		t.Errorf("a host two namespaces' marks name = %+v, want held by nobody's namespace", h["z.example"])
	}
}

// TestANamespaceTakesItsShareOfAGateway: one namespace's listeners take at most MaxPerNamespace
// places on a shard's Gateway, so the others still get theirs; its Secrets are at most what one
// ReferenceGrant lists.
func TestANamespaceTakesItsShareOfAGateway(t *testing.T) {
	in := Input{Holders: map[string]Holder{"b.example": {Namespace: "b", Shard: "s1"}}, Gateways: map[string]bool{"s1": true}}
	var ls []gatewayv1.ListenerEntry
	for i := range MaxPerNamespace + 2 {
		host := fmt.Sprintf("h%d.a.example", i)
		in.Holders[host] = Holder{Namespace: "a", Shard: "s1"}
		ls = append(ls, httpsL(fmt.Sprintf("l%d", i), host, secret(fmt.Sprintf("s%d", i%3))))
	}
	in.Sets = []gatewayv1.ListenerSet{set("a", "greedy", 0, ls...), set("b", "late", 9, httpL("http", "b.example"))}
	d := Decide(in)
	if n := len(d.Listeners["s1"]); n != MaxPerNamespace+1 {
		t.Fatalf("%d listeners on s1's Gateway, want a's %d and b's", n, MaxPerNamespace)
	}
	if c := cond(t, d, "b", "late", "http", "Programmed"); c.Status != "True" {
		t.Errorf("b's listener = %+v, want programmed beside a's share", c)
	}
	if c := cond(t, d, "a", "greedy", fmt.Sprintf("l%d", MaxPerNamespace), "Accepted"); c.Reason != "TooManyListeners" {
		t.Errorf("a's listener past its share = %+v, want TooManyListeners", c)
	}
	if n := len(d.Grants["a"]); n > MaxSecretsPerNamespace {
		t.Errorf("a's grant names %d Secrets, more than one ReferenceGrant lists", n)
	}
}

// TestStatusSaysWhatBecameOfAPlacedListener: a listener on a shard whose objects were not applied,
// of a namespace whose grant was not written, or that the routers could not load, is not told
// Programmed; its placement stays (what is rendered never depends on it).
func TestStatusSaysWhatBecameOfAPlacedListener(t *testing.T) {
	base := Input{Holders: map[string]Holder{"x.example": {Namespace: "a", Shard: "s1"}}, Gateways: map[string]bool{"s1": true},
		Sets: []gatewayv1.ListenerSet{set("a", "web", 0, httpsL("https", "x.example", secret("tls")))}}
	name := ListenerName("a", "web", "https")
	for _, c := range []struct {
		name        string
		mutate      func(*Input)
		typ, reason string
	}{
		{"shard not applied", func(in *Input) { in.Unapplied = map[string]bool{"s1": true} }, "Programmed", ReasonShardNotApplied},
		{"grant not written", func(in *Input) { in.Ungranted = map[string]string{"a": "in the way"} }, "ResolvedRefs", "RefNotPermitted"},
		{"routers refuse the certificate", func(in *Input) {
			in.Routers = map[string][]metav1.Condition{name: {{Type: "ResolvedRefs", Status: "False", Reason: "InvalidCertificateRef",
				Message: "secret a/tls not found"}}}
		}, "ResolvedRefs", "InvalidCertificateRef"},
	} {
		in := base
		c.mutate(&in)
		d := Decide(in)
		if len(d.Listeners["s1"]) != 1 {
			t.Errorf("%s: the listener's placement changed: %+v", c.name, d.Listeners)
		}
		got := cond(t, d, "a", "web", "https", c.typ)
		prog := cond(t, d, "a", "web", "https", "Programmed")
		if got.Status != "False" || got.Reason != c.reason || prog.Status != "False" {
			t.Errorf("%s: %s = %+v, Programmed %s; want False/%s", c.name, c.typ, got, prog.Status, c.reason)
		}
		if st := d.Status[types.NamespacedName{Namespace: "a", Name: "web"}]; meta.IsStatusConditionTrue(st.Conditions, "Programmed") {
			t.Errorf("%s: the ListenerSet is told Programmed", c.name)
		}
	}
}
