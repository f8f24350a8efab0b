package names

import (
	"strings"
	"testing"
)

// TestDefaultHostLabelsNeverCollide: the pairs that gave the same host before (a-b in c and a in
// b-c both gave a-b-c) get different labels, each recognised as its own pair's.
func TestDefaultHostLabelsNeverCollide(t *testing.T) {
	l1, ok1 := DefaultHostLabel("c", "a-b")
	l2, ok2 := DefaultHostLabel("b-c", "a")
	if !ok1 || !ok2 || l1 == l2 {
		t.Fatalf("labels %q and %q (ok %v %v) must differ", l1, l2, ok1, ok2)
	}
	for _, tt := range []struct{ label, ns, name string }{{l1, "c", "a-b"}, {l2, "b-c", "a"}} {
		ns, name, ok := DefaultHostOwner(tt.label)
		if !ok || ns != tt.ns || name != tt.name {
			t.Errorf("DefaultHostOwner(%q) = %q, %q, %v; want %s/%s", tt.label, ns, name, ok, tt.ns, tt.name)
		}
		if !IsDefaultHostLabelOf(tt.label, tt.ns, tt.name) {
			t.Errorf("%q not recognised as %s/%s's", tt.label, tt.ns, tt.name)
		}
	}
	if IsDefaultHostLabelOf(l1, "b-c", "a") {
		t.Error("a pair recognised another pair's label")
	}
	for _, l := range []string{"shop", "a-b-c", "web-prod-abcdefgh", "x", "-abcdefgh", strings.Repeat("z", 63)} {
		if ns, name, ok := DefaultHostOwner(l); ok {
			t.Errorf("DefaultHostOwner(%q) claims %s/%s", l, ns, name)
		}
	}
	if l, ok := DefaultHostLabel("ns", "web.v2"); !ok || !strings.HasPrefix(l, "web-v2-ns-") {
		t.Errorf("dotted name: %q %v", l, ok)
	}
	if _, ok := DefaultHostLabel(strings.Repeat("n", 40), strings.Repeat("i", 20)); ok {
		t.Error("a label over 63 characters accepted")
	}
}

func FuzzDefaultHostOwner(f *testing.F) {
	f.Add("web", "prod")
	f.Add("a-b", "c")
	f.Fuzz(func(t *testing.T, name, ns string) {
		if strings.ContainsAny(name, ".") {
			return
		}
		l, ok := DefaultHostLabel(ns, name)
		if !ok || name == "" || ns == "" {
			return
		}
		gotNS, gotName, found := DefaultHostOwner(l)
		if !found {
			t.Fatalf("%q (%s/%s) not recognised", l, ns, name)
		}
		if gotNS+"/"+gotName != ns+"/"+name && pairHash(gotNS, gotName) != pairHash(ns, name) {
			t.Fatalf("%q recognised as %s/%s, built for %s/%s", l, gotNS, gotName, ns, name)
		}
	})
}

func TestShardDomain(t *testing.T) {
	if ShardDomain("default", "c1.z") != "c1.z" || ShardDomain("edge", "c1.z") != "edge.c1.z" {
		t.Fatal("shard domains")
	}
}
