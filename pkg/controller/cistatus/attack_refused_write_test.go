package cistatus_test

import (
	"context"
	"testing"

	"github.com/shardgate/shardgate/pkg/controller/cistatus"
)

// TestWriteFailsWhenItsOwnPartIsRefused (attack review of the one status path): Board.Write is
// for a part that must be stored before its controller goes on (the routed-IP record before the
// Job it asks for; claims before the claims' own status; a missing source before its grace). When
// the API server refuses that very part, applyValidParts writes the others and Write returns nil:
// the controller goes on (creates the Job) on a record that was never stored, the failure the
// Write exists to prevent, and nothing is retried until the part changes.
func TestWriteFailsWhenItsOwnPartIsRefused(t *testing.T) {
	e := newWriterEnv(t)
	e.post(t, cistatus.Identity, holdDomain)
	e.post(t, cistatus.DNS, publishDNS)
	ci := e.get(t)
	e.board.Overlay(ci)
	rec := record("192.0.2.1")
	rec[0].Phase = "Bogus" // outside the schema's enum: one controller's bug
	ci.Status.RoutedIPs = rec
	err := e.board.Write(context.Background(), ci, cistatus.RoutedIPs)
	if got := e.get(t).Status.RoutedIPs; err == nil && len(got) == 0 {
		t.Fatalf("Write returned nil but the routed-IP part was refused and is not stored (status %+v)", e.get(t).Status.RoutedIPs)
	}
}
