package cistatus

import "k8s.io/utils/clock"

// SetClock sets the clock that dates posts (tests of the writer's wait for records).
func (b *Board) SetClock(c clock.PassiveClock) { b.clock = c }
