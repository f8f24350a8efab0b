package main

import (
	"strings"
	"testing"
)

// TestValidateAdmission: the webhook's flags are all given or the bind address is not; each bad
// value is named.
func TestValidateAdmission(t *testing.T) {
	full := func(f func(*options)) options {
		o := options{admissionAddr: ":9443", admissionConfiguration: "shardgate",
			admissionHosts: stringList{"shardgate-webhook.sg.svc", "127.0.0.1"}}
		f(&o)
		return o
	}
	tests := []struct {
		name string
		o    options
		want string // "" = valid
	}{
		{"off", options{}, ""},
		{"off, other flags ignored", options{admissionConfiguration: "x"}, ""},
		{"all four", full(func(*options) {}), ""},
		{"no configuration", full(func(o *options) { o.admissionConfiguration = "" }), "needs --admission-webhook-configuration"},
		{"no hosts", full(func(o *options) { o.admissionHosts = nil }), "needs"},
		{"bad host", full(func(o *options) { o.admissionHosts = stringList{"not a host"} }), "neither a DNS name"},
		{"no port", full(func(o *options) { o.admissionAddr = "127.0.0.1" }), "not host:port"},
		{"port 0", full(func(o *options) { o.admissionAddr = ":0" }), "not host:port"},
	}
	for _, tt := range tests {
		err := validateAdmission(tt.o)
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}
