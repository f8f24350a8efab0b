package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shardgate/shardgate/pkg/dnsrecords"
	"github.com/shardgate/shardgate/test/framework"
)

// endpointPhases follows every DNSEndpoint of the seed's default namespace and keeps, per name,
// when each generation was written and when external-dns marked it seen (status.observedGeneration):
// the two steps between a node change and BIND's answer that the benches split the latency into.
type endpointPhases struct {
	mu     sync.Mutex
	events map[string][]endpointEvent
}

type endpointEvent struct {
	at       time.Time
	gen      int64
	targets  int
	observed int64
}

func followEndpoints(ctx context.Context, b *testing.B, seed *framework.ControlPlane) *endpointPhases {
	items, events := watchEndpoints(ctx, b, seed)
	p := &endpointPhases{events: map[string][]endpointEvent{}}
	p.note(items...)
	go func() {
		for ev := range events {
			if ep, ok := ev.Object.(*dnsrecords.DNSEndpoint); ok {
				p.note(*ep)
			}
		}
	}()
	return p
}

func (p *endpointPhases) note(eps ...dnsrecords.DNSEndpoint) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ep := range eps {
		targets := 0
		if len(ep.Spec.Endpoints) > 0 {
			targets = len(ep.Spec.Endpoints[0].Targets)
		}
		p.events[ep.Name] = append(p.events[ep.Name], endpointEvent{at: now, gen: ep.Generation, targets: targets,
			observed: ep.Status.ObservedGeneration})
	}
}

// phases returns, for the DNSEndpoint name, when after since its first record set first held want
// targets (written) and when external-dns first marked that generation seen (seen); ok is false
// while either has not happened.
func (p *endpointPhases) phases(name string, since time.Time, want int) (written, seen time.Time, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	gen := int64(-1)
	for _, e := range p.events[name] {
		if e.at.Before(since) {
			continue
		}
		if gen < 0 && e.targets == want {
			gen, written = e.gen, e.at
		}
		if gen >= 0 && e.observed >= gen {
			return written, e.at, true
		}
	}
	return written, seen, false
}

// split turns node-change times and BIND-answer times of clusters ids into the three steps:
// Shardgate writing the DNSEndpoint, external-dns marking it seen, and the record reaching BIND.
func (p *endpointPhases) split(ids []int, changed, answered []time.Time, want int) (write, see, publish []time.Duration) {
	for x, i := range ids {
		w, s, ok := p.phases(fmt.Sprintf("u%d", i), changed[x], want)
		if !ok {
			continue
		}
		write = append(write, w.Sub(changed[x]))
		see = append(see, s.Sub(w))
		publish = append(publish, max(0, answered[x].Sub(s)))
	}
	return write, see, publish
}
