package admission

import (
	"bytes"
	"testing"
	"time"
)

// TestWithCA: a replica's CA is added beside the others (never replacing them), once; expired
// CAs and blocks that are not certificates go; past the bound the oldest others go, never the
// replica's own; and every replica writes the same bundle for the same CAs (no ping-pong).
func TestWithCA(t *testing.T) {
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	issue := func(at time.Time) []byte {
		t.Helper()
		b, err := Issue(Bundle{}, Renewal{CA: true, Serving: true}, []string{"wh"}, at)
		if err != nil {
			t.Fatal(err)
		}
		return b.CACert
	}
	a, b, c := issue(now.Add(-3*time.Hour)), issue(now.Add(-2*time.Hour)), issue(now.Add(-time.Hour))
	expired := issue(now.Add(-2 * caValidity))
	cat := func(pems ...[]byte) []byte { return bytes.Join(pems, nil) }
	count := func(bundle []byte) int { return len(parseTrusted(bundle, now)) }

	if got, changed := WithCA(nil, a, 4, now); !changed || count(got) != 1 {
		t.Errorf("empty bundle: %d CAs, changed %v", count(got), changed)
	}
	ab, _ := WithCA(a, b, 4, now)
	if count(ab) != 2 {
		t.Fatalf("b added beside a: %d CAs", count(ab))
	}
	if again, changed := WithCA(ab, a, 4, now); changed || !bytes.Equal(again, ab) {
		t.Error("a replica whose CA is trusted rewrote the bundle (ping-pong with the other)")
	}
	if got, _ := WithCA(cat(ab, []byte("junk\n"), expired), c, 4, now); count(got) != 3 ||
		bytes.Contains(got, []byte("junk")) {
		t.Errorf("expired CA or junk kept: %d CAs", count(got))
	}
	if got, _ := WithCA(cat(ab, c), c, 2, now); count(got) != 2 || !bytes.Contains(got, pemBody(c)) ||
		!bytes.Contains(got, pemBody(b)) || bytes.Contains(got, pemBody(a)) {
		t.Error("past the bound: not the oldest other (a) dropped")
	}
	if got, _ := WithCA(cat(b, c), a, 2, now); !bytes.Contains(got, pemBody(a)) || count(got) != 2 {
		t.Error("past the bound: the replica's own CA dropped")
	}
	if got, changed := WithCA(ab, []byte("not PEM"), 4, now); changed || !bytes.Equal(got, ab) {
		t.Error("an unusable own CA changed the bundle")
	}
}

// pemBody is a line from the middle of a PEM certificate, to find it in a bundle.
func pemBody(p []byte) []byte {
	lines := bytes.Split(p, []byte("\n"))
	return lines[len(lines)/2]
}
