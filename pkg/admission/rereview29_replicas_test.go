package admission

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// TestReReview29SeventeenReplicasNeverSettle (rereview29, Low, operator): nothing bounds replicas
// to the 16 CAs WithCA kept then (values.yaml replicas is free, the chart and the flags check nothing). With 17
// live replicas each Sync keeps its own CA and the 15 newest others, evicting a live replica's
// CA; that replica puts it back a minute later, evicting another: the configuration is rewritten
// forever and at every moment some live replica is untrusted.
func TestReReview29SeventeenReplicasNeverSettle(t *testing.T) {
	ctx := context.Background()
	c, get := rereview29Config(t)
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	now := t0.Add(time.Hour)
	var ks []*Keeper
	for i := 0; i < 17; i++ {
		at := t0.Add(time.Duration(i) * time.Minute)
		ks = append(ks, &Keeper{Client: c, Configuration: "sg", Hosts: []string{"wh.sg.svc"}, Log: logr.Discard(),
			Now: func() time.Time { return at }})
	}
	for round := 0; round < 3; round++ {
		for _, k := range ks {
			if err := k.Sync(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	rv := get().ResourceVersion
	for _, k := range ks {
		if err := k.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var untrusted []string
	for i, k := range ks {
		if !rereview29Trusted(t, k, get(), now) {
			untrusted = append(untrusted, fmt.Sprint(i))
		}
	}
	if get().ResourceVersion != rv || len(untrusted) > 0 {
		t.Fatalf("%d replicas: after 3 rounds the caBundle is still rewritten every round (resourceVersion %s -> %s), replicas %v untrusted",
			len(ks), rv, get().ResourceVersion, untrusted)
	}
}
