package dnsrecords

import "testing"

func TestMismatch(t *testing.T) {
	desired := []Endpoint{
		{DNSName: "c1.z.test", RecordType: "A", Targets: []string{"10.0.0.2", "10.0.0.1"}},
		{DNSName: "*.c1.z.test", RecordType: "A", Targets: []string{"10.0.0.1", "10.0.0.2"}},
		{DNSName: "lb.c1.z.test", RecordType: "CNAME", Targets: []string{"lb.example.org"}},
		{DNSName: "a-c1.z.test", RecordType: "TXT", Targets: []string{"heritage=external-dns"}},
	}
	good := Answers{"c1.z.test A": {"10.0.0.1", "10.0.0.2"}, "*.c1.z.test A": {"10.0.0.2", "10.0.0.1"}, "lb.c1.z.test CNAME": {"LB.example.org."}}
	if m := Mismatch(desired, good); m != "" {
		t.Errorf("equal answers: %s", m)
	}
	for name, got := range map[string]Answers{
		"missing":    {"c1.z.test A": {"10.0.0.1", "10.0.0.2"}},
		"stale node": {"c1.z.test A": {"10.0.0.1", "10.0.0.2", "10.0.0.3"}, "*.c1.z.test A": {"10.0.0.1", "10.0.0.2"}, "lb.c1.z.test CNAME": {"lb.example.org"}},
		"lost node":  {"c1.z.test A": {"10.0.0.1"}, "*.c1.z.test A": {"10.0.0.1", "10.0.0.2"}, "lb.c1.z.test CNAME": {"lb.example.org"}},
	} {
		if Mismatch(desired, got) == "" {
			t.Errorf("%s: no mismatch found", name)
		}
	}
}
