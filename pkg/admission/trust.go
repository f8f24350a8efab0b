package admission

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"slices"
	"time"
)

// MaxTrustedCAs bounds the CAs a webhook's caBundle keeps: one per replica that ran recently.
// Every replica issues a CA of its own when it starts and adds it; a restarted replica's old CA
// stays (its key died with the process, so it signs nothing more) until it expires or is the
// oldest past this bound. Sixteen leave room for a rollout of several replicas twice over.
const MaxTrustedCAs = 16

// WithCA is the caBundle that trusts ca beside the CAs bundle already trusts: ca added if
// missing, blocks that are not certificates or have expired at now dropped, and the oldest
// others (by NotBefore) dropped past keep. Another replica's CA is never replaced by this one's:
// each replica serves with its own, and all of them must be trusted at once. The order is the
// same whichever replica writes (newest first), so replicas never undo each other's writes. It
// reports whether the bundle changed.
func WithCA(bundle, ca []byte, keep int, now time.Time) ([]byte, bool) {
	own := parseTrusted(ca, now)
	if len(own) != 1 {
		return bundle, false
	}
	others := slices.DeleteFunc(parseTrusted(bundle, now), func(t trusted) bool { return bytes.Equal(t.der, own[0].der) })
	others = others[:min(len(others), max(keep-1, 0))] // newest first: the oldest go
	all := append(others, own[0])
	slices.SortStableFunc(all, newestFirst)
	var out bytes.Buffer
	for _, t := range all {
		_ = pem.Encode(&out, &pem.Block{Type: "CERTIFICATE", Bytes: t.der})
	}
	return out.Bytes(), !bytes.Equal(out.Bytes(), bundle)
}

type trusted struct {
	der       []byte
	notBefore time.Time
}

// parseTrusted are the certificates of a PEM bundle that have not expired at now, each once,
// newest first.
func parseTrusted(bundle []byte, now time.Time) []trusted {
	var out []trusted
	for rest := bundle; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if b.Type != "CERTIFICATE" || err != nil || !now.Before(c.NotAfter) ||
			slices.ContainsFunc(out, func(t trusted) bool { return bytes.Equal(t.der, b.Bytes) }) {
			continue
		}
		out = append(out, trusted{b.Bytes, c.NotBefore})
	}
	slices.SortStableFunc(out, newestFirst)
	return out
}

// newestFirst orders by NotBefore, newest first, then by the bytes: one order for every writer.
func newestFirst(a, b trusted) int {
	if c := b.notBefore.Compare(a.notBefore); c != 0 {
		return c
	}
	return bytes.Compare(a.der, b.der)
}
