package dns

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/shardgate/shardgate/pkg/dnsrecords"
)

// authority is a tiny authoritative server on loopback answering from records (name → A values).
func authority(t *testing.T, records map[string][]string) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		m.Authoritative = true
		q := r.Question[0]
		values, ok := records[strings.TrimSuffix(q.Name, ".")]
		if !ok {
			m.Rcode = dns.RcodeNameError
		}
		for _, v := range values {
			if q.Qtype == dns.TypeA {
				m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 5}, A: net.ParseIP(v)})
			}
		}
		_ = w.WriteMsg(m)
	})}
	go func() { _ = srv.ActivateAndServe() }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return pc.LocalAddr().String()
}

func TestVerifierCheck(t *testing.T) {
	desired := []dnsrecords.Endpoint{
		{DNSName: "c1.z.test", RecordType: "A", Targets: []string{"10.0.0.1", "10.0.0.2"}},
		{DNSName: "*.c1.z.test", RecordType: "A", Targets: []string{"10.0.0.1", "10.0.0.2"}},
		{DNSName: "a-c1.z.test", RecordType: "TXT", Targets: []string{"owner"}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	good := authority(t, map[string][]string{"c1.z.test": {"10.0.0.2", "10.0.0.1"}, "*.c1.z.test": {"10.0.0.1", "10.0.0.2"}})
	stale := authority(t, map[string][]string{"c1.z.test": {"10.0.0.1", "10.0.0.2"}, "*.c1.z.test": {"10.0.0.1", "10.0.0.2", "10.0.0.9"}})
	empty := authority(t, map[string][]string{})
	if m := NewVerifier([]string{good}, 100, time.Second).Check(ctx, desired); m != "" {
		t.Errorf("exact answers: %s", m)
	}
	// Every server must answer exactly the targets; the first difference is named.
	if m := NewVerifier([]string{good, stale}, 100, time.Second).Check(ctx, desired); !strings.Contains(m, stale) || !strings.Contains(m, "10.0.0.9") {
		t.Errorf("a stale target at the second server: %q", m)
	}
	if m := NewVerifier([]string{empty}, 100, time.Second).Check(ctx, desired); !strings.Contains(m, "answers []") {
		t.Errorf("nothing published yet: %q", m)
	}
	// A server that does not answer is no verification.
	dead, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	if m := NewVerifier([]string{dead.LocalAddr().String()}, 100, time.Second).Check(ctx, desired); !strings.Contains(m, "does not answer") {
		t.Errorf("a silent server: %q", m)
	}
}
