// Package routerload is what Shardgate knows of a router's load: a load reporter beside each
// router reads the router's own metrics on the pod's loopback (scrape.go), turns them into rates
// over a window (window.go) and renews a Lease in the user cluster with them (report.go, the
// reporter's loop in reporter.go); the seed reads the Leases from its cache of the user cluster
// (no API server ever reaches a pod) and decides each shard's load and saturation (shard.go).
//
// A report is the user cluster's owner's to write: every figure is bounded, a report's freshness
// is capped, and what was clamped is said. Reports only ever change their own cluster's
// allocations.
package routerload
