package shards

import "testing"

func TestSubset(t *testing.T) {
	have := map[string]any{
		"metadata": map[string]any{"name": "x", "labels": map[string]any{"a": "1", "server": "added"}},
		"spec": map[string]any{"replicas": int64(2), "ports": []any{
			map[string]any{"port": int64(80), "nodePort": int64(30080)},
		}},
	}
	tests := []struct {
		name string
		want map[string]any
		ok   bool
	}{
		{"server defaults ignored", map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": "1"}}, "spec": map[string]any{"ports": []any{map[string]any{"port": int64(80)}}}}, true},
		{"changed value", map[string]any{"spec": map[string]any{"replicas": int64(3)}}, false},
		{"missing key", map[string]any{"spec": map[string]any{"paused": true}}, false},
		{"list length differs", map[string]any{"spec": map[string]any{"ports": []any{map[string]any{"port": int64(80)}, map[string]any{"port": int64(443)}}}}, false},
		{"type differs", map[string]any{"spec": "x"}, false},
	}
	for _, tt := range tests {
		if got := subset(tt.want, have); got != tt.ok {
			t.Errorf("%s: subset = %v, want %v", tt.name, got, tt.ok)
		}
	}
}
