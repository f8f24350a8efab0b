package framework

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// DNSServer is a real BIND 9 (named) serving one fresh zone on 127.0.0.1 that accepts dynamic
// updates and zone transfers signed with a TSIG key, as external-dns' rfc2136 provider needs.
type DNSServer struct {
	Zone       string // without trailing dot, e.g. "e2e.shardgate.test"
	Addr       string // host:port
	Port       int
	TSIGName   string // with trailing dot
	TSIGSecret string // base64
	TSIGAlg    string // e.g. "hmac-sha256"
	// ACMETSIGName and ACMETSIGSecret are a second key allowed to update the zone, for ACME
	// DNS-01 solvers (cert-manager's rfc2136), so they never share external-dns' key.
	ACMETSIGName   string
	ACMETSIGSecret string

	proc *Process
}

// StartBIND starts named for zone and stops it when t ends. Debian's bind9 must be installed
// (make test installs it).
func StartBIND(t testing.TB, zone string) *DNSServer {
	t.Helper()
	s, err := startBIND(TestDir(t), zone)
	if err != nil {
		t.Fatalf("bind: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- named (tail) ---\n%s", s.proc.Tail(3000))
		}
		_ = s.proc.Stop()
	})
	return s
}

func startBIND(testDir, zone string) (*DNSServer, error) {
	named, err := exec.LookPath("named")
	if err != nil {
		named = "/usr/sbin/named"
		if _, serr := os.Stat(named); serr != nil {
			return nil, fmt.Errorf("named not found (apt-get install bind9): %w", err)
		}
	}
	dir, err := componentDir(testDir, "bind")
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	secret, acmeSecret := make([]byte, 32), make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	if _, err := rand.Read(acmeSecret); err != nil {
		return nil, err
	}
	s := &DNSServer{
		Zone: strings.TrimSuffix(zone, "."), Port: port, Addr: fmt.Sprintf("127.0.0.1:%d", port),
		TSIGName: "shardgate-test.", TSIGSecret: base64.StdEncoding.EncodeToString(secret), TSIGAlg: "hmac-sha256",
		ACMETSIGName: "acme-test.", ACMETSIGSecret: base64.StdEncoding.EncodeToString(acmeSecret),
	}
	zoneFile := filepath.Join(dir, s.Zone+".db")
	if err := os.WriteFile(zoneFile, []byte(s.zoneFile()), 0o644); err != nil {
		return nil, err
	}
	conf := filepath.Join(dir, "named.conf")
	if err := os.WriteFile(conf, []byte(s.namedConf(dir, zoneFile)), 0o644); err != nil {
		return nil, err
	}
	// -g: foreground, log to stderr; -n 1: one worker thread, the machine is small.
	s.proc, err = StartProcess(dir, ProcessSpec{Name: "named", Path: named, Args: []string{"-g", "-n", "1", "-c", conf}})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := waitFor(ctx, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		if exited, err := s.proc.Exited(); exited {
			return false, fmt.Errorf("named exited: %w", err)
		}
		r, err := s.Query(ctx, s.Zone, dns.TypeSOA)
		return err == nil && r.Rcode == dns.RcodeSuccess, err
	}); err != nil {
		_ = s.proc.Stop()
		return nil, fmt.Errorf("named not answering: %w\n%s", err, s.proc.Tail(2000))
	}
	return s, nil
}

func (s *DNSServer) zoneFile() string {
	z := s.Zone + "."
	return fmt.Sprintf(`$TTL 30
@	IN SOA	ns.%[1]s hostmaster.%[1]s ( 1 30 30 600 5 )
@	IN NS	ns.%[1]s
ns	IN A	127.0.0.1
`, z)
}

func (s *DNSServer) namedConf(dir, zoneFile string) string {
	return fmt.Sprintf(`options {
	directory "%[1]s";
	pid-file "%[1]s/named.pid";
	session-keyfile "%[1]s/session.key";
	managed-keys-directory "%[1]s";
	listen-on port %[2]d { 127.0.0.1; };
	listen-on-v6 { none; };
	recursion no;
	dnssec-validation no;
	allow-query { any; };
	notify no;
};
controls { };
key "%[3]s" {
	algorithm %[4]s;
	secret "%[5]s";
};
key "%[8]s" {
	algorithm %[4]s;
	secret "%[9]s";
};
zone "%[6]s" {
	type primary;
	file "%[7]s";
	allow-update { key "%[3]s"; key "%[8]s"; };
	allow-transfer { key "%[3]s"; };
};
`, dir, s.Port, s.TSIGName, s.TSIGAlg, s.TSIGSecret, s.Zone, zoneFile, s.ACMETSIGName, s.ACMETSIGSecret)
}

// Query asks the server directly (UDP, falling back to TCP on truncation).
func (s *DNSServer) Query(ctx context.Context, name string, qtype uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.RecursionDesired = false
	c := &dns.Client{Timeout: 2 * time.Second}
	r, _, err := c.ExchangeContext(ctx, m, s.Addr)
	if err == nil && r.Truncated {
		c.Net = "tcp"
		r, _, err = c.ExchangeContext(ctx, m, s.Addr)
	}
	return r, err
}

// Answer is what the server says for one name and type: the rcode and the sorted record values
// (addresses for A/AAAA, targets for CNAME, text for TXT).
type Answer struct {
	Rcode  int
	Values []string
}

// NXDomain reports whether the name does not exist.
func (a Answer) NXDomain() bool { return a.Rcode == dns.RcodeNameError }

func (a Answer) String() string {
	return fmt.Sprintf("%s %v", dns.RcodeToString[a.Rcode], a.Values)
}

// Lookup returns the answer for name and qtype.
func (s *DNSServer) Lookup(ctx context.Context, name string, qtype uint16) (Answer, error) {
	r, err := s.Query(ctx, name, qtype)
	if err != nil {
		return Answer{}, err
	}
	a := Answer{Rcode: r.Rcode}
	for _, rr := range r.Answer {
		switch v := rr.(type) {
		case *dns.A:
			if qtype == dns.TypeA {
				a.Values = append(a.Values, v.A.String())
			}
		case *dns.AAAA:
			if qtype == dns.TypeAAAA {
				a.Values = append(a.Values, v.AAAA.String())
			}
		case *dns.CNAME:
			a.Values = append(a.Values, strings.TrimSuffix(v.Target, "."))
		case *dns.TXT:
			a.Values = append(a.Values, strings.Join(v.Txt, ""))
		}
	}
	slices.Sort(a.Values)
	return a, nil
}

// WaitForAnswer polls until the server's answer for name/qtype satisfies want, and returns the
// last answer with an error naming it when ctx ends first.
func (s *DNSServer) WaitForAnswer(ctx context.Context, name string, qtype uint16, want func(Answer) bool) (Answer, error) {
	var last Answer
	err := waitFor(ctx, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		a, err := s.Lookup(ctx, name, qtype)
		if err != nil {
			return false, err
		}
		last = a
		return want(a), nil
	})
	if err != nil {
		return last, fmt.Errorf("%s %s: last answer %s: %w", name, dns.TypeToString[qtype], last, err)
	}
	return last, nil
}

// AnswerIs matches an answer with exactly the given values (order does not matter).
func AnswerIs(values ...string) func(Answer) bool {
	want := slices.Clone(values)
	slices.Sort(want)
	return func(a Answer) bool { return a.Rcode == dns.RcodeSuccess && slices.Equal(a.Values, want) }
}

// AnswerNXDomain matches a name that does not exist.
func AnswerNXDomain(a Answer) bool { return a.NXDomain() }

// Replace sets name's records of type qtype to values in the zone behind everyone's back (a
// dynamic update signed with the zone's key, as an operator with nsupdate would): for tests of
// what Shardgate and external-dns do about a record someone edited.
func (s *DNSServer) Replace(ctx context.Context, name string, qtype uint16, values ...string) error {
	fqdn := dns.Fqdn(name)
	m := new(dns.Msg)
	m.SetUpdate(dns.Fqdn(s.Zone))
	m.RemoveRRset([]dns.RR{&dns.ANY{Hdr: dns.RR_Header{Name: fqdn, Rrtype: qtype, Class: dns.ClassANY}}})
	for _, v := range values {
		rr, err := dns.NewRR(fmt.Sprintf("%s 5 IN %s %s", fqdn, dns.TypeToString[qtype], v))
		if err != nil {
			return err
		}
		m.Insert([]dns.RR{rr})
	}
	m.SetTsig(s.TSIGName, dns.HmacSHA256, 300, time.Now().Unix())
	c := &dns.Client{Timeout: 2 * time.Second, TsigSecret: map[string]string{s.TSIGName: s.TSIGSecret}}
	r, _, err := c.ExchangeContext(ctx, m, s.Addr)
	if err != nil {
		return err
	}
	if r.Rcode != dns.RcodeSuccess {
		return fmt.Errorf("update of %s: %s", name, dns.RcodeToString[r.Rcode])
	}
	return nil
}

// Process gives access to the running named (its PID, for CPU and memory figures).
func (s *DNSServer) Process() *Process { return s.proc }

// ZoneTransfer is one AXFR of the zone, as external-dns' rfc2136 provider makes every sync.
type ZoneTransfer struct {
	Records int            // resource records, SOA included twice as sent
	Bytes   int            // the records' wire size
	ByType  map[string]int // records by type (A, TXT, ...)
}

// Transfer transfers the zone (AXFR, signed with the zone's key).
func (s *DNSServer) Transfer(ctx context.Context) (ZoneTransfer, error) {
	m := new(dns.Msg)
	m.SetAxfr(dns.Fqdn(s.Zone))
	m.SetTsig(s.TSIGName, dns.HmacSHA256, 300, time.Now().Unix())
	tr := &dns.Transfer{TsigSecret: map[string]string{s.TSIGName: s.TSIGSecret}, DialTimeout: 2 * time.Second,
		ReadTimeout: 30 * time.Second}
	envs, err := tr.In(m, s.Addr)
	if err != nil {
		return ZoneTransfer{}, err
	}
	out := ZoneTransfer{ByType: map[string]int{}}
	for e := range envs {
		if e.Error != nil {
			return out, e.Error
		}
		for _, rr := range e.RR {
			out.Records++
			out.Bytes += dns.Len(rr)
			out.ByType[dns.TypeToString[rr.Header().Rrtype]]++
		}
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
	}
	return out, nil
}
