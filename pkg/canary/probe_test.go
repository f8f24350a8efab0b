package canary

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

func TestProbe(t *testing.T) {
	resolves := func(addrs ...string) Resolve {
		return func(context.Context, string) ([]string, error) { return addrs, nil }
	}
	var asked []string
	answers := func(byAddr map[string]string) Get {
		return func(_ context.Context, url, host string) (int, string, error) {
			asked = append(asked, url+" "+host)
			for a, answer := range byAddr {
				if strings.Contains(url, "//"+a+":") {
					switch answer {
					case "refused":
						return 0, "", errors.New("connect: connection refused")
					case "404":
						return 404, "404 page not found", nil
					}
					return 200, answer, nil
				}
			}
			return 0, "", errors.New("no route to host")
		}
	}
	for _, tc := range []struct {
		name        string
		resolve     Resolve
		get         Get
		reason      string
		failure     string
		askedWanted int
	}{
		{"every address answers OK", resolves("10.0.0.2", "10.0.0.1"), answers(map[string]string{"10.0.0.1": "OK", "10.0.0.2": "OK\n"}), v1alpha1.ReasonServing, "", 2},
		{"does not resolve", func(context.Context, string) ([]string, error) { return nil, errors.New("NXDOMAIN") }, answers(nil), v1alpha1.ReasonNotResolving, "does not resolve: NXDOMAIN", 0},
		{"no address", resolves(), answers(nil), v1alpha1.ReasonNotResolving, "has no address", 0},
		{"one address refuses", resolves("10.0.0.1", "10.0.0.2"), answers(map[string]string{"10.0.0.1": "OK", "10.0.0.2": "refused"}), v1alpha1.ReasonNotAnswering, "http://10.0.0.2:8080/ping (Host c.example): connect: connection refused", 2},
		{"the route is not programmed", resolves("10.0.0.1"), answers(map[string]string{"10.0.0.1": "404"}), v1alpha1.ReasonNotAnswering, "answered 404, not the routers' 200 OK", 1},
		{"another server answers", resolves("10.0.0.1"), answers(map[string]string{"10.0.0.1": "<html>"}), v1alpha1.ReasonNotAnswering, "not the routers' 200 OK", 1},
		// A tenant writes its nodes' addresses: the seed must not request itself or a metadata
		// service, and asks none of the addresses when one is refused.
		{"a loopback address is refused", resolves("10.0.0.1", "127.0.0.1"), answers(map[string]string{"10.0.0.1": "OK", "127.0.0.1": "OK"}),
			v1alpha1.ReasonAddressRefused, "resolves to 127.0.0.1: not requested, it is in 127.0.0.0/8", 0},
		{"the metadata service is refused", resolves("169.254.169.254"), answers(nil), v1alpha1.ReasonAddressRefused, "it is in 169.254.0.0/16", 0},
		{"an IPv4-mapped IPv6 loopback is refused", resolves("::ffff:127.0.0.1"), answers(nil), v1alpha1.ReasonAddressRefused, "it is in 127.0.0.0/8", 0},
		{"an operator's seed range is refused", resolves("10.96.0.10"), answers(nil), v1alpha1.ReasonAddressRefused, "it is in 10.96.0.0/12", 0},
		{"a name is not an address", resolves("metadata.google.internal"), answers(nil), v1alpha1.ReasonAddressRefused, "it is not an IP address", 0},
		{"at most three addresses asked", resolves("10.0.0.5", "10.0.0.4", "10.0.0.3", "10.0.0.2", "10.0.0.1"),
			answers(map[string]string{"10.0.0.1": "OK", "10.0.0.2": "OK", "10.0.0.3": "OK"}), v1alpha1.ReasonServing, "", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked = nil
			refused, err := DefaultRefused().WithCIDRs([]string{"10.96.0.0/12"})
			if err != nil {
				t.Fatal(err)
			}
			if refused, err = refused.WithAllowed([]string{"10.0.0.0/8"}); err != nil {
				t.Fatal(err)
			}
			r := Probe(context.Background(), "c.example", 8080, Request{Path: "/ping", Body: "OK"}, refused, tc.resolve, tc.get)
			if r.Reason != tc.reason || !strings.Contains(r.Failure, tc.failure) || (tc.failure == "" && r.Failure != "") || len(asked) != tc.askedWanted {
				t.Fatalf("%+v, asked %v", r, asked)
			}
			for _, a := range asked {
				if !strings.HasSuffix(a, " c.example") {
					t.Fatalf("asked without the canary host: %s", a)
				}
			}
		})
	}
}

// The body of a wrong answer never reaches the condition: whatever answered at a tenant-chosen
// address may be the seed's own secrets.
func TestProbeKeepsBodiesOut(t *testing.T) {
	get := func(context.Context, string, string) (int, string, error) { return 500, "token=s3cr3t", nil }
	r := Probe(context.Background(), "c.example", 80, Request{Path: "/ping", Body: "OK"}, DefaultRefused(),
		func(context.Context, string) ([]string, error) { return []string{"203.0.113.1"}, nil }, get)
	if r.Reason != v1alpha1.ReasonNotAnswering || strings.Contains(r.Failure, "s3cr3t") {
		t.Fatalf("%+v", r)
	}
}

func TestRefusedCIDRs(t *testing.T) {
	if _, err := DefaultRefused().WithCIDRs([]string{"10.0.0.0/8", "nope"}); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("a bad CIDR was taken: %v", err)
	}
	r, err := DefaultRefused().WithCIDRs([]string{"10.1.2.3/16"})
	if err == nil {
		r, err = r.WithAllowed([]string{"10.0.0.0/8"})
	}
	if err != nil || r.Refuses("10.1.200.1") == "" || r.Refuses("10.2.0.1") != "" || r.Refuses("fe80::1") == "" || r.Refuses("2001:db8::1") != "" {
		t.Fatalf("%v %v", r, err)
	}
	if _, err := DefaultRefused().WithAllowed([]string{"nope"}); err == nil {
		t.Fatal("a bad allowed CIDR was taken")
	}
}

// TestPrivateRangesRefusedUnlessAllowed: the seed's own network is usually private, so the
// canary requests a private address (RFC 1918, CGNAT, ULA) only inside the operator's allowed
// ranges, and an allowed range never lifts loopback, link-local or the operator's refused ranges.
func TestPrivateRangesRefusedUnlessAllowed(t *testing.T) {
	allowed, err := DefaultRefused().WithCIDRs([]string{"10.96.0.0/12"})
	if err == nil {
		allowed, err = allowed.WithAllowed([]string{"10.0.0.0/8", "fd00:1::/64", "127.0.0.0/8", "169.254.0.0/16"})
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		addr             string
		byDefault, given bool // refused by DefaultRefused; by allowed
	}{
		{"10.0.0.1", true, false},
		{"172.16.0.1", true, true},
		{"172.31.255.255", true, true},
		{"172.32.0.1", false, false},
		{"192.168.1.1", true, true},
		{"100.64.0.1", true, true},
		{"100.127.255.254", true, true},
		{"100.128.0.1", false, false},
		{"fd00::1", true, true},
		{"fc00::1", true, true},
		{"fd00:1::5", true, false},
		{"::ffff:192.168.0.1", true, true},
		{"10.96.0.10", true, true},      // the operator's refused range beats the allowed 10/8
		{"127.0.0.1", true, true},       // never, whatever is allowed
		{"169.254.169.254", true, true}, // never, whatever is allowed
		{"203.0.113.7", false, false},
		{"2001:db8::1", false, false},
	} {
		if got := DefaultRefused().Refuses(tt.addr) != ""; got != tt.byDefault {
			t.Errorf("%s by default: refused %v, want %v", tt.addr, got, tt.byDefault)
		}
		if got := allowed.Refuses(tt.addr) != ""; got != tt.given {
			t.Errorf("%s with allowed ranges: refused %v, want %v", tt.addr, got, tt.given)
		}
	}
}

func TestNodePortRange(t *testing.T) {
	for _, tt := range []struct {
		in  string
		ok  bool
		min int
	}{{"30000-32767", true, 30000}, {"80-80", true, 80}, {"0-100", false, 0}, {"2-1", false, 0}, {"1-65536", false, 0}, {"30000", false, 0}, {"a-b", false, 0}} {
		r, err := ParsePortRange(tt.in)
		if (err == nil) != tt.ok || r.Min != tt.min {
			t.Errorf("%q: %+v %v", tt.in, r, err)
		}
	}
	for _, tt := range []struct {
		port    int
		refused bool
	}{{30000, false}, {32767, false}, {31080, false}, {29999, true}, {32768, true}, {22, true}, {2379, true}, {10250, true}, {0, true}} {
		if got := DefaultNodePorts.Refuses(tt.port) != ""; got != tt.refused {
			t.Errorf("port %d: refused %v, want %v", tt.port, got, tt.refused)
		}
	}
}

func TestCondition(t *testing.T) {
	failed := metav1.Condition{Type: v1alpha1.ConditionRoutesServing, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonNotAnswering,
		Message: "timeout", LastTransitionTime: metav1.NewTime(time.Date(2026, 11, 23, 1, 2, 3, 0, time.UTC))}
	ok := Result{Host: "c.example", Addresses: []string{"10.0.0.1"}, Reason: v1alpha1.ReasonServing}
	healed := Condition(&failed, ok)
	if healed.Status != metav1.ConditionTrue || !strings.Contains(healed.Message, "last failure (from 2026-11-23T01:02:03Z): timeout") {
		t.Fatalf("healed: %+v", healed)
	}
	// Still serving: the last failure stays, the message does not change (no status write).
	if again := Condition(&healed, ok); again.Message != healed.Message {
		t.Fatalf("serving again: %q != %q", again.Message, healed.Message)
	}
	if fresh := Condition(nil, ok); strings.Contains(fresh.Message, "last failure") {
		t.Fatalf("fresh: %+v", fresh)
	}
	waiting := metav1.Condition{Type: v1alpha1.ConditionRoutesServing, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonNoRouterReady}
	if first := Condition(&waiting, ok); strings.Contains(first.Message, "last failure") {
		t.Fatalf("waiting for the first router counted as a failure: %+v", first)
	}
	// The readiness probe saw the wedged router after the canary did: the shard had no ready
	// router in between, and the failure is still kept once it serves again.
	notReady := waiting
	notReady.Message = "the shard has no ready router" + LastFailure(&failed)
	if after := Condition(&notReady, ok); !strings.Contains(after.Message, "last failure (from 2026-11-23T01:02:03Z): timeout") {
		t.Fatalf("the failure before the routers were not ready is lost: %+v", after)
	}
	bad := Condition(&healed, Result{Host: "c.example", Reason: v1alpha1.ReasonNotResolving, Failure: "c.example has no address"})
	if bad.Status != metav1.ConditionFalse || bad.Message != "c.example has no address" {
		t.Fatalf("failed: %+v", bad)
	}
}
