package admission

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"maps"
	"slices"
	"time"
)

// SeenAnnotation, on the webhook configuration, maps the fingerprint of each CA a replica added
// to when that replica last said it was alive (RFC 3339). CAs not named there are not
// Shardgate's (an administrator's, say) and are left in the bundle as they are.
const SeenAnnotation = "shardgate.io/webhook-ca-seen"

const (
	// refreshSeen: a live replica renews its CA's entry this often (one write of the
	// configuration per replica per refreshSeen, not per check).
	refreshSeen = 10 * time.Minute
	// staleAfter: a CA whose replica has not renewed its entry for this long is dropped: the
	// replica is gone (restarted with a new CA, or scaled away), and its key with it.
	staleAfter = 6 * refreshSeen
	// maxOwnCAs bounds Shardgate's CAs in a bundle if replicas restart faster than staleAfter
	// drops them (a crash loop): past it, the least recently seen go, never the writer's own.
	maxOwnCAs = 64
)

// WithCA is the caBundle that trusts ca beside every CA bundle already trusts that is alive:
// another replica's CA stays while that replica renews its entry in seen (each replica serves
// with its own, and all of them must be trusted at once); one not renewed for staleAfter, or
// expired, goes; a CA not in seen (not Shardgate's) is never touched. ca's own entry is renewed
// when older than refreshSeen. The order is the same whichever replica writes (others as they
// were, then Shardgate's by fingerprint), so replicas never undo each other's writes. It reports
// whether the bundle or seen changed.
func WithCA(bundle, ca []byte, seen map[string]time.Time, now time.Time) ([]byte, map[string]time.Time, bool) {
	own, _ := pem.Decode(ca)
	if own == nil || own.Type != "CERTIFICATE" {
		return bundle, seen, false
	}
	ownFP := fingerprint(own.Bytes)
	next := maps.Clone(seen)
	if next == nil {
		next = map[string]time.Time{}
	}
	if last, ok := next[ownFP]; !ok || now.Sub(last) >= refreshSeen || last.After(now) {
		next[ownFP] = now
	}
	var others bytes.Buffer
	ours := map[string][]byte{ownFP: own.Bytes}
	for rest := bundle; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		fp := fingerprint(b.Bytes)
		if _, shardgates := next[fp]; !shardgates || b.Type != "CERTIFICATE" {
			_ = pem.Encode(&others, b) // not ours: kept as it was
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if fp != ownFP && (err != nil || !now.Before(c.NotAfter) || now.Sub(next[fp]) > staleAfter) {
			continue
		}
		ours[fp] = b.Bytes
	}
	for fp := range next { // entries whose CA left the bundle, or went stale
		if _, kept := ours[fp]; !kept {
			delete(next, fp)
		}
	}
	for len(ours) > maxOwnCAs {
		oldest := ""
		for fp := range ours {
			if fp != ownFP && (oldest == "" || next[fp].Before(next[oldest]) ||
				(next[fp].Equal(next[oldest]) && fp < oldest)) {
				oldest = fp
			}
		}
		delete(ours, oldest)
		delete(next, oldest)
	}
	out := others.Bytes()
	for _, fp := range slices.Sorted(maps.Keys(ours)) {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ours[fp]})...)
	}
	changed := !bytes.Equal(out, bundle) || !maps.EqualFunc(next, seen, time.Time.Equal)
	return out, next, changed
}

func fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:16])
}
