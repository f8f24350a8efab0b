package main

import "testing"

func TestSoftMemoryLimit(t *testing.T) {
	for _, tt := range []struct {
		name  string
		env   map[string]string
		limit int64
		ok    bool
	}{
		{"from the container's limit", map[string]string{memoryLimitEnv: "536870912"}, 483183820, true},
		{"GOMEMLIMIT wins", map[string]string{memoryLimitEnv: "536870912", "GOMEMLIMIT": "300MiB"}, 0, false},
		{"no limit", map[string]string{}, 0, false},
		{"not a number", map[string]string{memoryLimitEnv: "512Mi"}, 0, false},
		{"zero", map[string]string{memoryLimitEnv: "0"}, 0, false},
	} {
		limit, ok := softMemoryLimit(func(k string) string { return tt.env[k] })
		if limit != tt.limit || ok != tt.ok {
			t.Errorf("%s: %d %v, want %d %v", tt.name, limit, ok, tt.limit, tt.ok)
		}
	}
}
