package framework

import (
	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
)

// Main runs a test binary's tests and makes sure every component they started is stopped, also
// when the run is interrupted (Ctrl-C, SIGTERM): t.Cleanup does not run then. Use it from
// TestMain: func TestMain(m *testing.M) { framework.Main(m) }.
func Main(m *testing.M) {
	mainRuns = true
	// envtest logs through controller-runtime; the components' own logs are in the run directory.
	ctrllog.SetLogger(logr.Discard())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		fmt.Fprintf(os.Stderr, "framework: %v: stopping every started component\n", s)
		_ = StopAll()
		os.Exit(130)
	}()
	code := m.Run()
	err := StopAll()
	if err != nil {
		fmt.Fprintf(os.Stderr, "framework: stopping leftover components: %v\n", err)
	}
	if code == 0 && err == nil && runDirTemp {
		_ = os.RemoveAll(runDir) // a failed run keeps its logs
	}
	os.Exit(code)
}

// mainRuns says whether the test binary runs under Main, which stops shared components at its end.
var mainRuns bool

// MainRuns says whether the test binary runs under Main: a component shared by the whole binary
// (StartSharedControlPlane) outlives the binary's processes otherwise.
func MainRuns() bool { return mainRuns }
