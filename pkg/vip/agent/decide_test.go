package agent

import (
	"testing"
	"time"
)

func TestRewriteDue(t *testing.T) {
	for _, tc := range []struct {
		name      string
		now, last bool
		since     time.Duration
		due       bool
	}{
		{name: "a change is written at once", now: true, last: false, since: 0, due: true},
		{name: "the other way too", now: false, last: true, since: 10 * time.Millisecond, due: true},
		{name: "the same within a second waits", now: true, last: true, since: 999 * time.Millisecond},
		{name: "the same after a second is written again", now: true, last: true, since: time.Second, due: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rewriteDue(tc.now, tc.last, tc.since); got != tc.due {
				t.Fatalf("rewriteDue(%v, %v, %s) = %v", tc.now, tc.last, tc.since, got)
			}
		})
	}
}

func TestDecideReload(t *testing.T) {
	a, b := Rendered{Config: "config A", VIPs: "10.0.0.1 1"}, Rendered{Config: "config B", VIPs: "10.0.0.2 2"}
	da, db := digest([]byte(a.Config)), digest([]byte(b.Config))
	for _, tc := range []struct {
		name string
		in   reloadInput
		want reloadDecision
	}{{
		name: "nothing loaded, nothing reported, nothing read: nothing to do",
		in:   reloadInput{Wanted: a},
	}, {
		name: "keepalived started with the wanted configuration: reported at once",
		in:   reloadInput{Loaded: da, Wanted: a, Latest: a, Read: true},
		want: reloadDecision{Report: true, Reported: da, KeepVIPs: true},
	}, {
		name: "the same digest again: not reported again",
		in:   reloadInput{Loaded: da, Reported: da, Wanted: a, Latest: a, Read: true},
		want: reloadDecision{Reported: da, KeepVIPs: true},
	}, {
		name: "the digest gone after keepalived ran: unknown, never 'nothing runs'",
		in:   reloadInput{Reported: da, Wanted: a},
		want: reloadDecision{Report: true, Reported: unknownConfig},
	}, {
		name: "a new configuration read: written (keepalived reloads), the old one still reported",
		in:   reloadInput{Loaded: da, Reported: da, Wanted: a, Latest: b, Read: true},
		want: reloadDecision{Reported: da, Write: true},
	}, {
		name: "the reload applied: the new digest reported",
		in:   reloadInput{Loaded: db, Reported: da, Wanted: b, Latest: b, Read: true},
		want: reloadDecision{Report: true, Reported: db, KeepVIPs: true},
	}, {
		name: "in FAULT and running the wanted configuration: ask the peers",
		in:   reloadInput{Loaded: da, Reported: da, Wanted: a, Latest: a, Read: true, Faulted: true},
		want: reloadDecision{Reported: da, KeepVIPs: true, AskPeers: true},
	}, {
		name: "in FAULT, keepalived not on the wanted configuration yet: the peers are not asked",
		in:   reloadInput{Loaded: db, Reported: db, Wanted: a, Latest: a, Read: true, Faulted: true},
		want: reloadDecision{Reported: db, KeepVIPs: true},
	}, {
		name: "in FAULT, a new configuration: written, the peers not asked",
		in:   reloadInput{Loaded: da, Reported: da, Wanted: a, Latest: b, Read: true, Faulted: true},
		want: reloadDecision{Reported: da, Write: true},
	}, {
		name: "the source read nothing: no write, the VIP list kept as it is",
		in:   reloadInput{Loaded: da, Reported: da, Wanted: a, Faulted: true},
		want: reloadDecision{Reported: da},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if got := decideReload(tc.in); got != tc.want {
				t.Fatalf("decideReload = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestHeartbeat: the agent is alive while its health file changes within agentSilence, on the
// monotonic clock of the looks; the file's own time counts only at the first look, so a clock
// stepped afterwards neither faults a live agent nor hides a dead one.
func TestHeartbeat(t *testing.T) {
	t0 := time.Now()
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	s1, s2 := [3]int64{1, 100, 2}, [3]int64{2, 200, 2}
	type look struct {
		present  bool
		stamp    [3]int64
		modified time.Time
		now      time.Time
		alive    bool
	}
	for _, tc := range []struct {
		name  string
		looks []look
	}{
		{name: "no file yet: not alive", looks: []look{{now: at(0)}}},
		{name: "written lately at the first look: alive until agentSilence passes without a change", looks: []look{
			{present: true, stamp: s1, modified: at(-time.Second), now: at(0), alive: true},
			{present: true, stamp: s1, modified: at(-time.Second), now: at(agentSilence - time.Millisecond), alive: true},
			{present: true, stamp: s1, modified: at(-time.Second), now: at(agentSilence)},
		}},
		{name: "old at the first look: not alive until it changes", looks: []look{
			{present: true, stamp: s1, modified: at(-time.Hour), now: at(0)},
			{present: true, stamp: s2, modified: at(-time.Hour), now: at(time.Second), alive: true},
		}},
		{name: "the wall clock stepped back: a changing file is alive whatever its time says", looks: []look{
			{present: true, stamp: s1, modified: at(0), now: at(0), alive: true},
			{present: true, stamp: s2, modified: at(-24 * time.Hour), now: at(2 * time.Second), alive: true},
			{present: true, stamp: s1, modified: at(-48 * time.Hour), now: at(4 * time.Second), alive: true},
		}},
		{name: "the wall clock stepped forward: an unchanged file dies on the monotonic clock", looks: []look{
			{present: true, stamp: s1, modified: at(0), now: at(0), alive: true},
			{present: true, stamp: s1, modified: at(0), now: at(agentSilence)},
		}},
		{name: "the file removed: alive only until agentSilence after its last change", looks: []look{
			{present: true, stamp: s1, modified: at(0), now: at(0), alive: true},
			{now: at(time.Second), alive: true},
			{now: at(agentSilence)},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &heartbeat{}
			for i, l := range tc.looks {
				if got := h.observe(l.present, l.stamp, l.modified, l.now); got != l.alive {
					t.Fatalf("look %d: alive %v, want %v", i, got, l.alive)
				}
			}
		})
	}
}

// TestSettled: the router counts as serving only once it has answered without a miss for the
// settle; a miss counts at once; with no settle, at its first answer.
func TestSettled(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		answers bool
		since   time.Duration // answering for
		settle  time.Duration
		want    bool
	}{
		{"no settle: first answer", true, 0, 0, true},
		{"within the settle", true, 4 * time.Second, 5 * time.Second, false},
		{"settled", true, 5 * time.Second, 5 * time.Second, true},
		{"a miss counts at once", false, time.Minute, 5 * time.Second, false},
	} {
		if got := settled(tc.answers, t0, t0.Add(tc.since), tc.settle); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
