package dnsname

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestNormalizeZone(t *testing.T) {
	good := map[string]string{
		"example.com":   "example.com",
		"Example.COM.":  "example.com",
		" a.b.c ":       "a.b.c",
		"test":          "test",
		"x-1.y2.zone-3": "x-1.y2.zone-3",
	}
	for in, want := range good {
		got, err := NormalizeZone(in)
		if err != nil || got != want {
			t.Errorf("NormalizeZone(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", ".", "a..b", "-a.b", "a-.b", "a_b.c", "*.a.b", "a b", strings.Repeat("a", 64) + ".b", strings.Repeat("abcdefgh.", 29) + "c"} {
		if got, err := NormalizeZone(bad); err == nil {
			t.Errorf("NormalizeZone(%q) = %q, want an error", bad, got)
		}
	}
}

func TestDomain(t *testing.T) {
	if d, err := Domain("c1", "example.com"); err != nil || d != "c1.example.com" {
		t.Fatalf("Domain = %q, %v", d, err)
	}
	for _, bad := range []string{"", "C1", "c_1", "-c", "c.1", strings.Repeat("c", 64)} {
		if _, err := Domain(bad, "example.com"); err == nil {
			t.Errorf("Domain(%q) accepted", bad)
		}
	}
	// A valid ID and zone whose wildcard plus the registry prefix would not fit.
	zone := strings.Repeat(strings.Repeat("z", 60)+".", 3) + "abc" // 186 chars
	id := strings.Repeat("c", 63)
	if _, err := Domain(id, zone); err == nil || !strings.Contains(err.Error(), "more than 253") {
		t.Fatalf("overlong names accepted: %v", err)
	}
	if _, err := Domain(id[:50], zone); err != nil {
		t.Fatalf("names that fit rejected: %v", err)
	}
}

// FuzzNames checks the promises of the validators on arbitrary input: no panic, and whatever is
// accepted yields names that are valid DNS names within limits.
func FuzzNames(f *testing.F) {
	for _, s := range [][2]string{{"c1", "example.com"}, {"", ""}, {"C1", "Ex.COM."}, {"a", strings.Repeat("b.", 130)}, {"x-y", "*.z"}, {"ü", "ß.de"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, id, zone string) {
		z, err := NormalizeZone(zone)
		if err != nil {
			return
		}
		if z != strings.ToLower(z) || strings.HasSuffix(z, ".") || len(z) > 253 {
			t.Fatalf("zone %q normalized to %q", zone, z)
		}
		d, err := Domain(id, z)
		if err != nil {
			return
		}
		w := WildcardName(d)
		if len(w)+registryPrefixLength > 253 {
			t.Fatalf("accepted %q of %d chars", w, len(w))
		}
		if errs := validation.IsDNS1123Subdomain(d); len(errs) > 0 {
			t.Fatalf("accepted domain %q is not a DNS subdomain: %v", d, errs)
		}
		if errs := validation.IsWildcardDNS1123Subdomain(w); len(errs) > 0 {
			t.Fatalf("accepted wildcard %q invalid: %v", w, errs)
		}
	})
}
