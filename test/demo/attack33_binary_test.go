package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A commit once added /demo, a 70 MB unstripped ELF executable (what `go build ./test/demo`
// leaves in the repository root; it was taken out of the history before it landed). Nobody can
// review one, every clone carries it forever, and a reader may run it believing it is built from
// this tree. No tracked file is an executable binary.
func TestAttack33NoBinaryIsTracked(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		fh, err := os.Open(filepath.Join(root, f))
		if err != nil {
			continue
		}
		head := make([]byte, 4)
		n, _ := fh.Read(head)
		fh.Close()
		if n == 4 && bytes.Equal(head, []byte("\x7fELF")) {
			st, _ := os.Stat(filepath.Join(root, f))
			t.Errorf("%s is a tracked ELF binary (%d bytes): remove it from the commit and ignore /%s", f, st.Size(), f)
		}
	}
}
