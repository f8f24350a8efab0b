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
	// IDs of 58-63 characters are DNS labels, but external-dns' ownership record of the apex
	// (cname-<id>) would not be one.
	if _, err := Domain(strings.Repeat("c", 57), "example.com"); err != nil {
		t.Fatalf("a 57-character ID rejected: %v", err)
	}
	for _, n := range []int{58, 59, 63} {
		if _, err := Domain(strings.Repeat("c", n), "example.com"); err == nil || !strings.Contains(err.Error(), "at most 57") {
			t.Errorf("a %d-character ID: %v, want refused naming the limit", n, err)
		}
	}
	// At the 253-character edge: the domain may be at most 242 long (cname-star.<domain>).
	zoneOf := func(n int) string { // a valid zone of exactly n characters
		z := ""
		for len(z) < n {
			z += strings.Repeat("z", min(60, n-len(z)-1)) + "."
		}
		return strings.TrimSuffix(z, ".") + strings.Repeat("y", n-len(strings.TrimSuffix(z, ".")))
	}
	for _, tt := range []struct {
		domainLen int
		ok        bool
	}{{242, true}, {243, false}, {246, false}} {
		zone := zoneOf(tt.domainLen - 3)
		d, err := Domain("c1", zone)
		if (err == nil) != tt.ok {
			t.Errorf("domain of %d characters (%d): err %v, want ok=%v", tt.domainLen, len("c1."+zone), err, tt.ok)
		}
		if err == nil {
			for _, n := range RegistryNames(d) {
				if len(n) > 253 {
					t.Errorf("accepted %s whose ownership name %d > 253", d, len(n))
				}
			}
		}
	}
}

func TestCheckDomain(t *testing.T) {
	if err := CheckDomain(strings.Repeat("s", 57) + ".c1.example.com"); err != nil {
		t.Fatal(err)
	}
	if err := CheckDomain(strings.Repeat("s", 58) + ".c1.example.com"); err == nil {
		t.Fatal("a 58-character shard label accepted")
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
		for _, n := range RegistryNames(d) {
			first, _, _ := strings.Cut(n, ".")
			if len(n) > 253 || len(first) > 63 {
				t.Fatalf("accepted %q whose ownership name %q does not fit", d, n)
			}
		}
		if errs := validation.IsDNS1123Subdomain(d); len(errs) > 0 {
			t.Fatalf("accepted domain %q is not a DNS subdomain: %v", d, errs)
		}
		if errs := validation.IsWildcardDNS1123Subdomain(w); len(errs) > 0 {
			t.Fatalf("accepted wildcard %q invalid: %v", w, errs)
		}
	})
}
