package main

import (
	"strconv"
)

// memoryLimitEnv carries the container's memory limit in bytes (the chart sets it from the
// limit with a resourceFieldRef).
const memoryLimitEnv = "SHARDGATE_MEMORY_LIMIT"

// memoryLimitShare of the container's limit is the Go runtime's soft memory limit: the garbage
// collector works harder as the heap nears it, well before the kernel kills the container, and
// the rest is left for what the runtime does not count (thread stacks outside Go, the page cache
// of the binary).
const memoryLimitShare = 0.9

// softMemoryLimit is the runtime's memory limit for the environment env: a share of the
// container's limit, unless GOMEMLIMIT is set (the operator's own choice, which the runtime
// applies by itself) or no usable limit is given.
func softMemoryLimit(env func(string) string) (int64, bool) {
	if env("GOMEMLIMIT") != "" {
		return 0, false
	}
	limit, err := strconv.ParseInt(env(memoryLimitEnv), 10, 64)
	if err != nil || limit <= 0 {
		return 0, false
	}
	return int64(float64(limit) * memoryLimitShare), true
}
