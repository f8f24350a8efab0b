package certs

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestSchedule: new orders stay within the seed's budget per week whoever asks; the queue is
// deterministic (clusters that ordered less this week first, then the oldest cluster, then by
// name) and every waiting cluster is told when its turn comes.
func TestSchedule(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	created := func(d int) time.Time { return now.Add(-time.Duration(d) * day) }
	order := func(cluster string, ago time.Duration) Order {
		return Order{Cluster: cluster, Names: "n", At: now.Add(-ago)}
	}
	for _, tt := range []struct {
		name    string
		perWeek int
		orders  []Order
		waiting []Waiting
		want    map[string]time.Time
	}{
		{"budget free: every one now", 3, nil,
			[]Waiting{{"ns/a", created(1), true}, {"ns/b", created(2), true}},
			map[string]time.Time{"ns/a": now, "ns/b": now}},
		{"the oldest cluster first; the next when the first order leaves the window", 1, nil,
			[]Waiting{{"ns/new", created(1), true}, {"ns/old", created(9), true}},
			map[string]time.Time{"ns/old": now, "ns/new": now.Add(OrderWindow)}},
		{"same age: by name", 1, nil,
			[]Waiting{{"ns/b", created(1), true}, {"ns/a", created(1), true}},
			map[string]time.Time{"ns/a": now, "ns/b": now.Add(OrderWindow)}},
		{"spent budget: turns follow the ledger's oldest orders", 2,
			[]Order{order("x/1", 6*day), order("x/2", 2*day)},
			[]Waiting{{"ns/a", created(3), true}, {"ns/b", created(2), true}, {"ns/c", created(1), true}},
			map[string]time.Time{"ns/a": now.Add(day), "ns/b": now.Add(5 * day), "ns/c": now.Add(8 * day)}},
		{"orders older than a week are spent no more", 1,
			[]Order{order("x/1", 8*day)},
			[]Waiting{{"ns/a", created(3), true}},
			map[string]time.Time{"ns/a": now}},
		{"a tenant churning names cannot starve other clusters' new names", 2,
			[]Order{order("ns/old", 3*day)},
			[]Waiting{{"ns/old", created(100), false}, {"ns/new", created(1), false}},
			map[string]time.Time{"ns/new": now, "ns/old": now.Add(4 * day)}},
		{"first certificates before new names, even of older clusters", 1, nil,
			[]Waiting{{"ns/old", created(100), false}, {"ns/new", created(1), true}},
			map[string]time.Time{"ns/new": now, "ns/old": now.Add(OrderWindow)}},
		{"a budget lowered below what was spent: wait until few enough remain", 1,
			[]Order{order("x/1", 6*day), order("x/2", 5*day), order("x/3", day)},
			[]Waiting{{"ns/a", created(1), true}},
			map[string]time.Time{"ns/a": now.Add(6 * day)}},
		{"an order dated after now (another replica's clock) counts", 1,
			[]Order{{Cluster: "x/1", Names: "n", At: now.Add(time.Minute)}},
			[]Waiting{{"ns/a", created(1), true}},
			map[string]time.Time{"ns/a": now.Add(time.Minute + OrderWindow)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Schedule(tt.perWeek, tt.orders, tt.waiting, now)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("got %v\nwant %v", got, tt.want)
			}
			// The same input in another order: the same plan.
			rev := make([]Waiting, len(tt.waiting))
			for i, w := range tt.waiting {
				rev[len(rev)-1-i] = w
			}
			if again := Schedule(tt.perWeek, tt.orders, rev, now); fmt.Sprint(again) != fmt.Sprint(got) {
				t.Fatalf("order-dependent: %v vs %v", again, got)
			}
		})
	}
}

// TestScheduleNeverExceedsTheBudget: however many clusters wait, no window of a week holds more
// than perWeek orders, counting the ledger's.
func TestScheduleNeverExceedsTheBudget(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	orders := []Order{{Cluster: "x/1", At: now.Add(-50 * time.Hour)}, {Cluster: "x/2", At: now.Add(-time.Hour)}}
	var waiting []Waiting
	for i := range 40 {
		waiting = append(waiting, Waiting{Cluster: fmt.Sprintf("ns/c%02d", i), Created: now.Add(-time.Duration(i) * time.Hour), First: i%2 == 0})
	}
	const perWeek = 5
	at := Schedule(perWeek, orders, waiting, now)
	all := []time.Time{orders[0].At, orders[1].At}
	for _, a := range at {
		all = append(all, a)
	}
	for _, start := range all {
		n := 0
		for _, a := range all {
			if !a.Before(start) && a.Before(start.Add(OrderWindow)) {
				n++
			}
		}
		if n > perWeek {
			t.Fatalf("%d orders in the week from %s", n, start)
		}
	}
}

func TestLedger(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	orders := []Order{{Cluster: "ns/a", Names: "k1", At: now.Add(-8 * 24 * time.Hour)}, {Cluster: "ns/b", Names: "k2", At: now.Add(-time.Hour)}}
	back, err := ParseLedger(FormatLedger(orders, now))
	if err != nil || len(back) != 1 || back[0].Cluster != "ns/b" || !back[0].At.Equal(orders[1].At) {
		t.Fatalf("%v %v", back, err)
	}
	if !Ordered(back, "ns/b", "k2", now) || Ordered(back, "ns/b", "k3", now) || Ordered(orders, "ns/a", "k1", now) {
		t.Fatal("Ordered")
	}
	if _, err := ParseLedger("{not json"); !errors.Is(err, ErrLedger) {
		t.Fatalf("garbage ledger: %v", err)
	}
	if o, err := ParseLedger(""); err != nil || o != nil {
		t.Fatalf("empty ledger: %v %v", o, err)
	}
}
