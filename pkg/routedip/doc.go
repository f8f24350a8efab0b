// Package routedip decides where routed (floating) IPs go and how they get there: the election
// of a holder (elect.go), the steps of a move through the class's Jobs (move.go), the class's
// firewall map (firewall.go), the Jobs themselves (jobs.go), what a RoutedIP may ask for
// (admit.go). All of it is pure; pkg/controller/routedips gathers, calls these and applies.
package routedip
