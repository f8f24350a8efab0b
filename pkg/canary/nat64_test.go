package canary

import "testing"

// TestNAT64AndSixToFourAreRefused: O reports a node address in the NAT64 well-known prefix
// (RFC 6052) embedding the metadata service or a private seed address; on a seed with NAT64 (common
// on IPv6-only clusters) the request reaches that IPv4 address, past the refused ranges.
func TestNAT64AndSixToFourAreRefused(t *testing.T) {
	r := DefaultRefused()
	for _, a := range []string{"64:ff9b::a9fe:a9fe", "64:ff9b::a00:1", "64:ff9b:1::a9fe:a9fe"} {
		if r.Refuses(a) == "" {
			t.Errorf("%s (NAT64 of a refused IPv4 address) is requested", a)
		}
	}
}
