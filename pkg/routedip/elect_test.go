package routedip

import (
	"testing"
	"time"
)

func TestElect(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	node := func(name string, age int, mods ...func(*Node)) Node {
		n := Node{Name: name, Created: t0.Add(time.Duration(age) * time.Hour), Ready: true, Schedulable: true, ProviderID: "p://" + name}
		for _, m := range mods {
			m(&n)
		}
		return n
	}
	notReady := func(n *Node) { n.Ready = false }
	cordoned := func(n *Node) { n.Schedulable = false }
	deleting := func(n *Node) { n.Deleting = true }
	noID := func(n *Node) { n.ProviderID = "" }
	serving := func(names ...string) map[string]bool {
		m := map[string]bool{}
		for _, n := range names {
			m[n] = true
		}
		return m
	}
	all := serving("a", "b", "c")
	cases := []struct {
		name  string
		nodes []Node
		reqs  []Request
		limit int
		want  []string // node per request, in key order ("" = none)
	}{
		{"youngest eligible wins", []Node{node("a", 1), node("b", 3), node("c", 2)}, []Request{{Key: "x", Serving: all}}, 1, []string{"b"}},
		{"only serving nodes", []Node{node("a", 1), node("b", 3), node("c", 2)}, []Request{{Key: "x", Serving: serving("a", "c")}}, 1, []string{"c"}},
		{"a healthy holder keeps it when a younger node appears", []Node{node("a", 1), node("b", 9)}, []Request{{Key: "x", Holder: "a", Serving: all}}, 1, []string{"a"}},
		{"not ready holder loses it", []Node{node("a", 1, notReady), node("b", 2)}, []Request{{Key: "x", Holder: "a", Serving: all}}, 1, []string{"b"}},
		{"cordoned holder loses it", []Node{node("a", 1, cordoned), node("b", 2)}, []Request{{Key: "x", Holder: "a", Serving: all}}, 1, []string{"b"}},
		{"deleted holder loses it", []Node{node("a", 1, deleting), node("b", 2)}, []Request{{Key: "x", Holder: "a", Serving: all}}, 1, []string{"b"}},
		{"holder whose router is gone loses it", []Node{node("a", 1), node("b", 2)}, []Request{{Key: "x", Holder: "b", Serving: serving("a")}}, 1, []string{"a"}},
		{"holder gone from the cluster", []Node{node("a", 1)}, []Request{{Key: "x", Holder: "zz", Serving: all}}, 1, []string{"a"}},
		{"no provider ID, not eligible", []Node{node("a", 1), node("b", 2, noID)}, []Request{{Key: "x", Serving: all}}, 1, []string{"a"}},
		{"a move under way keeps its target", []Node{node("a", 1), node("b", 2), node("c", 3)}, []Request{{Key: "x", MovingTo: "b", Serving: all}}, 1, []string{"b"}},
		{"limit 1 spreads", []Node{node("a", 1), node("b", 2)}, []Request{{Key: "x", Serving: all}, {Key: "y", Serving: all}}, 1, []string{"b", "a"}},
		{"limit 1 never shares, even with no other node", []Node{node("a", 1)}, []Request{{Key: "x", Serving: all}, {Key: "y", Serving: all}}, 1, []string{"a", ""}},
		{"limit 2 shares on the youngest", []Node{node("a", 1), node("b", 2)}, []Request{{Key: "x", Serving: all}, {Key: "y", Serving: all}}, 2, []string{"b", "b"}},
		{"holders are placed before newcomers", []Node{node("a", 1), node("b", 2)}, []Request{{Key: "x", Serving: all}, {Key: "y", Holder: "b", Serving: all}}, 1, []string{"a", "b"}},
		{"nothing eligible", []Node{node("a", 1, notReady)}, []Request{{Key: "x", Holder: "a", Serving: all}}, 1, []string{""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Elect(c.nodes, c.reqs, c.limit)
			for i, d := range got {
				if d.Node != c.want[i] {
					t.Errorf("%s: got %q, want %q (%s)", d.Key, d.Node, c.want[i], d.Why)
				}
				if d.Node == "" && d.Why == "" {
					t.Errorf("%s: no node and no reason", d.Key)
				}
			}
		})
	}
}

func TestWhyNone(t *testing.T) {
	n := []Node{{Name: "a", Ready: true, Schedulable: true}}
	if got := Elect(n, []Request{{Key: "x", Serving: map[string]bool{}}}, 1)[0].Why; got != "no node runs a ready endpoint of the Service" {
		t.Errorf("no endpoints: %q", got)
	}
	if got := Elect(n, []Request{{Key: "x", Serving: map[string]bool{"a": true}}}, 1)[0].Why; got != "none of the 1 healthy nodes running a ready endpoint has a spec.providerID the class's providerIDPattern accepts for the cluster" {
		t.Errorf("no provider ID: %q", got)
	}
	// A node whose provider ID is not proven the cluster's is never elected, even the youngest.
	n = append(n, Node{Name: "b", Ready: true, Schedulable: true, ProviderID: "p://seed", Foreign: true})
	if d := Elect(n, []Request{{Key: "x", Serving: map[string]bool{"a": true, "b": true}}}, 1)[0]; d.Node != "" {
		t.Errorf("foreign node elected: %+v", d)
	}
}
