package admission

import (
	"bytes"
	"encoding/pem"
	"testing"
	"time"
)

// TestWithCA: a replica's CA is added beside the others, never replacing a live one; a CA whose
// replica stopped renewing its entry, or that expired, goes; a CA that is not Shardgate's is never
// touched; renewing an entry happens only every refreshSeen; and every replica writes the same
// bundle for the same CAs (no ping-pong).
func TestWithCA(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	issue := func(at time.Time) []byte {
		t.Helper()
		b, err := Issue(Bundle{}, Renewal{CA: true, Serving: true}, []string{"wh"}, at)
		if err != nil {
			t.Fatal(err)
		}
		return b.CACert
	}
	a, b, admins := issue(now.Add(-3*time.Hour)), issue(now.Add(-2*time.Hour)), issue(now.Add(-400*24*time.Hour))
	fp := func(ca []byte) string { blk, _ := pem.Decode(ca); return fingerprint(blk.Bytes) }
	has := func(bundle, ca []byte) bool {
		blk, _ := pem.Decode(ca)
		return bytes.Contains(bundle, pem.EncodeToMemory(blk))
	}

	// a joins an empty bundle, then b joins beside it.
	bundleA, seenA, changed := WithCA(nil, a, nil, now)
	if !changed || !has(bundleA, a) || !seenA[fp(a)].Equal(now) {
		t.Fatalf("a's CA not added: %v %v", changed, seenA)
	}
	bundleAB, seenAB, _ := WithCA(bundleA, b, seenA, now.Add(time.Minute))
	if !has(bundleAB, a) || !has(bundleAB, b) || len(seenAB) != 2 {
		t.Fatalf("b's CA not beside a's: %v", seenAB)
	}
	// a checks again within refreshSeen: nothing to write (no ping-pong with b).
	if got, seen, changed := WithCA(bundleAB, a, seenAB, now.Add(2*time.Minute)); changed || !bytes.Equal(got, bundleAB) ||
		len(seen) != 2 {
		t.Error("a rewrote a bundle that already trusts it")
	}
	// Past refreshSeen, a renews its entry only.
	later := now.Add(refreshSeen + time.Minute)
	got, seen, changed := WithCA(bundleAB, a, seenAB, later)
	if !changed || !bytes.Equal(got, bundleAB) || !seen[fp(a)].Equal(later) || !seen[fp(b)].Equal(seenAB[fp(b)]) {
		t.Errorf("a's renewal: changed %v, seen %v", changed, seen)
	}
	// b stopped renewing (restarted with a new CA, or gone): dropped after staleAfter, a kept.
	gone := now.Add(staleAfter + 2*time.Minute)
	got, seen, _ = WithCA(bundleAB, a, seenAB, gone)
	if has(got, b) || !has(got, a) || len(seen) != 1 {
		t.Errorf("a stale CA kept, or a live one dropped: %v", seen)
	}
	// An administrator's CAs (not in seen), expired or not, and other PEM blocks stay as they were.
	mixed := append(append(append([]byte{}, admins...), bundleAB...), []byte("-----BEGIN X-----\nAAAA\n-----END X-----\n")...)
	got, _, _ = WithCA(mixed, a, seenAB, now.Add(3*time.Minute))
	if !has(got, admins) || !bytes.Contains(got, []byte("BEGIN X")) || !has(got, b) {
		t.Error("a CA or block that is not Shardgate's was dropped")
	}
	// The same CAs give the same bundle whoever writes.
	fromB, _, _ := WithCA(bundleAB, b, seenAB, now.Add(3*time.Minute))
	fromA, _, _ := WithCA(bundleAB, a, seenAB, now.Add(3*time.Minute))
	if !bytes.Equal(fromA, fromB) {
		t.Error("two replicas write the same CAs in different orders")
	}
	// An unusable own CA changes nothing.
	if got, _, changed := WithCA(bundleAB, []byte("not PEM"), seenAB, now); changed || !bytes.Equal(got, bundleAB) {
		t.Error("an unusable own CA changed the bundle")
	}
}

// TestWithCABoundsACrashLoop: replicas restarting faster than staleAfter add at most maxOwnCAs,
// the least recently seen going first, never the writer's own.
func TestWithCABoundsACrashLoop(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	var bundle []byte
	var seen map[string]time.Time
	var last []byte
	for i := range maxOwnCAs + 5 {
		b, err := Issue(Bundle{}, Renewal{CA: true, Serving: true}, []string{"wh"}, now)
		if err != nil {
			t.Fatal(err)
		}
		last = b.CACert
		bundle, seen, _ = WithCA(bundle, last, seen, now.Add(time.Duration(i)*time.Second))
	}
	if n := bytes.Count(bundle, []byte("BEGIN CERTIFICATE")); n != maxOwnCAs || len(seen) != maxOwnCAs {
		t.Errorf("%d CAs and %d entries, want %d", n, len(seen), maxOwnCAs)
	}
	blk, _ := pem.Decode(last)
	if _, ok := seen[fingerprint(blk.Bytes)]; !ok {
		t.Error("the writer's own CA was dropped")
	}
}
