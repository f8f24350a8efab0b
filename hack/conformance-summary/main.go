// Command conformance-summary reads `go test -json` of TestGatewayAPIConformance on stdin, writes
// the plain test log to the file named by its argument, and prints one row per conformance test:
// its name, result and why (the skip's message, a failure's first assertion). The testing
// package gives a test no way to read its subtests' failure messages, so the table is made here.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
)

const root = "TestGatewayAPIConformance"

type event struct {
	Action  string
	Test    string
	Output  string
	Elapsed float64
}

type result struct {
	name, action string
	elapsed      float64
	reason       string
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go test -json ... | conformance-summary LOGFILE")
		os.Exit(2)
	}
	log, err := os.Create(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer log.Close()
	var order []string
	results := map[string]*result{}
	lines := map[string][]string{} // by full test name
	rootAction := "no result (the run did not finish)"
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			fmt.Fprintln(log, sc.Text()) // the build's own output
			continue
		}
		fmt.Fprint(log, e.Output)
		if e.Action == "output" {
			lines[e.Test] = append(lines[e.Test], e.Output)
		}
		if e.Test == root && (e.Action == "pass" || e.Action == "fail") {
			rootAction = e.Action
		}
		rest, ok := strings.CutPrefix(e.Test, root+"/")
		if !ok || e.Action != "pass" && e.Action != "fail" && e.Action != "skip" {
			continue
		}
		name, _, _ := strings.Cut(rest, "/")
		r := results[name]
		if r == nil {
			r = &result{name: name}
			results[name] = r
			order = append(order, name)
		}
		switch {
		case e.Action == "fail" && r.reason == "":
			// A subtest fails before its parents: the first failure is the deepest, and says why.
			r.reason = failure(lines[e.Test])
		case e.Action == "skip" && e.Test == root+"/"+name:
			r.reason = lastMessage(lines[e.Test])
		}
		if e.Test == root+"/"+name {
			r.action, r.elapsed = e.Action, e.Elapsed
		}
	}
	slices.Sort(order)
	count := map[string]int{}
	var unsupported []string // features the run claims no support for
	fmt.Printf("%-56s %-6s %7s  %s\n", "TEST", "RESULT", "TIME", "REASON")
	for _, name := range order {
		r := results[name]
		count[r.action]++
		if _, f, ok := strings.Cut(r.reason, "suite does not support "); ok && r.action == "skip" {
			if !slices.Contains(unsupported, f) {
				unsupported = append(unsupported, f)
			}
			continue
		}
		fmt.Println(wrap(fmt.Sprintf("%-56s %-6s %6.1fs  ", name, r.action, r.elapsed), r.reason))
	}
	fmt.Printf("passed %d, failed %d, skipped %d; %s: %s\n", count["pass"], count["fail"], count["skip"], root, rootAction)
	for _, l := range lines[root] {
		if m := lastMessage([]string{l}); strings.HasPrefix(m, "profile ") {
			fmt.Println("the suite's report:", m)
		}
	}
	fmt.Println(wrap("not listed, skipped: outside GATEWAY-HTTP's core, the run claims no support for ",
		strings.Join(unsupported, ", ")))
	if rootAction != "pass" && count["fail"] == 0 {
		fmt.Print("its own log (failed outside the conformance tests):\n", strings.Join(tail(lines[root], 30), ""))
	}
	fmt.Println("full log:", os.Args[1])
}

// failure is why a test failed, from its own output: the first failed assertion (testify's
// "Error:" and "Messages:" lines), else its last message; with the last expectation the suite's
// HTTP checks found unmet.
func failure(lines []string) string {
	var msg []string
	for i, l := range lines {
		f := strings.TrimSpace(l)
		if k, ok := strings.CutPrefix(f, "Error:"); ok && len(msg) == 0 {
			msg = append(msg, strings.TrimSpace(k))
			if i+1 < len(lines) && !strings.Contains(lines[i+1], ":\t") { // a continued message
				msg = append(msg, strings.TrimSpace(lines[i+1]))
			}
		}
		if k, ok := strings.CutPrefix(f, "Messages:"); ok && len(msg) > 0 {
			msg = append(msg, strings.TrimSpace(k))
			break
		}
	}
	if len(msg) == 0 {
		msg = append(msg, lastMessage(lines))
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if _, unmet, ok := strings.Cut(lines[i], "not ready yet: "); ok {
			return strings.Join(append(msg, "(last: "+strings.TrimSpace(unmet)+")"), " ")
		}
	}
	return strings.Join(msg, " ")
}

// lastMessage is the last line a test logged ("file.go:12: [time: ]message"), without its source
// and time.
func lastMessage(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		f := strings.TrimSpace(lines[i])
		if f == "" || strings.HasPrefix(f, "---") || strings.HasPrefix(f, "===") {
			continue
		}
		_, m, _ := strings.Cut(f, ": ")
		if t, rest, ok := strings.Cut(m, ": "); ok && strings.HasSuffix(t, "Z") && strings.Contains(t, "T") {
			m = rest // the suite's tlog prefixes its time
		}
		return m
	}
	return ""
}

// wrap appends s to row in lines of at most width columns, the later ones indented.
func wrap(row, s string) string {
	const width, indent = 120, "        "
	var b strings.Builder
	line := row
	for _, w := range strings.Fields(s) {
		if len(line)+len(w) > width && line != row && line != indent {
			b.WriteString(strings.TrimRight(line, " ") + "\n")
			line = indent
		}
		line += w + " "
	}
	b.WriteString(strings.TrimRight(line, " "))
	return b.String()
}

func tail(lines []string, n int) []string {
	if len(lines) > n {
		return lines[len(lines)-n:]
	}
	return lines
}
