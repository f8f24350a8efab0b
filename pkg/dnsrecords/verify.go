package dnsrecords

import (
	"fmt"
	"slices"
	"strings"
)

// Answers are what an authoritative server answered, by record name and type ("name A").
type Answers map[string][]string

// AnswerKey is the Answers key of a record.
func AnswerKey(name, recordType string) string {
	return strings.ToLower(strings.TrimSuffix(name, ".")) + " " + recordType
}

// Verifiable are the records whose answers can be compared: A, AAAA and CNAME (external-dns'
// TXT ownership records are its own business).
func Verifiable(eps []Endpoint) []Endpoint {
	var out []Endpoint
	for _, e := range eps {
		switch e.RecordType {
		case "A", "AAAA", "CNAME":
			out = append(out, e)
		}
	}
	return out
}

// Mismatch says the first record whose answer is not exactly its targets ("" when every one
// is): the answer must equal the desired set, nothing more (a stale node still answered is a
// mismatch too).
func Mismatch(desired []Endpoint, got Answers) string {
	for _, e := range Verifiable(desired) {
		want := canonical(e.Targets)
		have := canonical(got[AnswerKey(e.DNSName, e.RecordType)])
		if !slices.Equal(want, have) {
			return fmt.Sprintf("%s %s answers [%s], want [%s]", e.DNSName, e.RecordType, strings.Join(have, " "), strings.Join(want, " "))
		}
	}
	return ""
}

func canonical(values []string) []string {
	out := make([]string, 0, len(values))
	for _, v := range values {
		out = append(out, strings.ToLower(strings.TrimSuffix(v, ".")))
	}
	slices.Sort(out)
	return slices.Compact(out)
}
