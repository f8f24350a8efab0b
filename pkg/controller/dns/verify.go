package dns

import (
	"context"
	"fmt"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/time/rate"

	"github.com/shardgate/shardgate/pkg/dnsrecords"
)

// Verifier asks the zone's authoritative servers what they answer for a cluster's records, so
// that DNSPublished means "the servers answer exactly the desired targets", not merely
// "external-dns has the DNSEndpoint". Its queries share one rate limit, however many clusters
// there are.
type Verifier struct {
	// Servers are the authoritative servers (host:port), each asked.
	Servers []string
	// Interval between checks of a cluster whose answers were right (a record edited behind
	// Shardgate's back shows within it); a cluster still propagating is checked every second.
	Interval time.Duration
	limiter  *rate.Limiter
}

// NewVerifier asks servers at most qps queries a second (burst: one cluster's worth).
func NewVerifier(servers []string, qps float64, interval time.Duration) *Verifier {
	return &Verifier{Servers: servers, Interval: interval, limiter: rate.NewLimiter(rate.Limit(qps), 64)}
}

// Check returns "" when every server answers every verifiable record with exactly its targets,
// else what differs first (or which server did not answer).
func (v *Verifier) Check(ctx context.Context, desired []dnsrecords.Endpoint) string {
	records := dnsrecords.Verifiable(desired)
	for _, server := range v.Servers {
		got := dnsrecords.Answers{}
		for _, e := range records {
			if err := v.limiter.Wait(ctx); err != nil {
				return "verification stopped: " + err.Error()
			}
			values, err := query(ctx, server, e.DNSName, e.RecordType)
			if err != nil {
				return fmt.Sprintf("%s does not answer for %s %s: %v", server, e.DNSName, e.RecordType, err)
			}
			got[dnsrecords.AnswerKey(e.DNSName, e.RecordType)] = values
		}
		if m := dnsrecords.Mismatch(records, got); m != "" {
			return server + ": " + m
		}
	}
	return ""
}

// query asks server for name's records of recordType, without recursion (authoritative data
// only), over UDP and again over TCP when the answer was truncated.
func query(ctx context.Context, server, name, recordType string) ([]string, error) {
	qtype, ok := dns.StringToType[recordType]
	if !ok {
		return nil, fmt.Errorf("record type %s", recordType)
	}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.RecursionDesired = false
	c := &dns.Client{Timeout: 2 * time.Second}
	r, _, err := c.ExchangeContext(ctx, m, server)
	if err == nil && r.Truncated {
		c.Net = "tcp"
		r, _, err = c.ExchangeContext(ctx, m, server)
	}
	if err != nil {
		return nil, err
	}
	if r.Rcode != dns.RcodeSuccess && r.Rcode != dns.RcodeNameError {
		return nil, fmt.Errorf("rcode %s", dns.RcodeToString[r.Rcode])
	}
	var out []string
	for _, rr := range r.Answer {
		switch rr := rr.(type) {
		case *dns.A:
			if qtype == dns.TypeA {
				out = append(out, rr.A.String())
			}
		case *dns.AAAA:
			if qtype == dns.TypeAAAA {
				out = append(out, rr.AAAA.String())
			}
		case *dns.CNAME:
			if qtype == dns.TypeCNAME {
				out = append(out, rr.Target)
			}
		}
	}
	return out, nil
}

// LookupA asks the first server for name's A records (sharing the verifier's rate limit): the
// canary resolves its names where DNSPublished is verified, not through a cache on the way.
func (v *Verifier) LookupA(ctx context.Context, name string) ([]string, error) {
	if err := v.limiter.Wait(ctx); err != nil {
		return nil, err
	}
	return query(ctx, v.Servers[0], name, "A")
}
