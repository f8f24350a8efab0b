package nodeports

import "testing"

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Range
		ok   bool
	}{
		{Default, Range{30000, 32767}, true},
		{"80-80", Range{80, 80}, true},
		{"1-65535", Range{1, 65535}, true},
		{"0-100", Range{}, false},
		{"200-100", Range{}, false},
		{"1-65536", Range{}, false},
		{"30000", Range{}, false},
		{"", Range{}, false},
		{"a-b", Range{}, false},
		{"-1-5", Range{}, false},
	} {
		got, err := Parse(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("Parse(%q) = %v, %v; want %v, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
	r := Range{10, 20}
	if !r.Contains(10) || !r.Contains(20) || r.Contains(9) || r.Contains(21) {
		t.Errorf("Contains is not inclusive of exactly [10, 20]")
	}
}
