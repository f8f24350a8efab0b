// Command shardgate-demo (`make demo`) runs Shardgate on a local embedded default: a seed and
// user clusters (real API servers; real nodes with kubelet and containerd, or simulated ones),
// BIND with external-dns, and the seed controller with its status page. It prints where
// everything is and what to try, keeps a live summary in place, and stops every process it
// started on Ctrl-C, SIGTERM or a closed terminal (exit 0), and on SIGKILL too (its PID
// namespace goes with it).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shardgate/shardgate/test/framework"
)

// logName is the demo's log in the run directory: the harness's messages, the last line and the
// exit status.
const logName = "demo.log"

type options struct {
	clusters  int
	nodes     int
	simulated bool
	interval  int
	// haproxy: an HAProxy shard beside Traefik's, on a node of its own in every cluster.
	haproxy bool
}

func main() {
	var o options
	flag.IntVar(&o.clusters, "clusters", 2, "user clusters (1-5)")
	flag.IntVar(&o.nodes, "nodes", 2, "nodes per user cluster (1-5)")
	flag.BoolVar(&o.simulated, "simulated", false, "simulated nodes (kwok) instead of real ones (kubelet + containerd): starts in seconds, but no router really runs")
	sweep := flag.Bool("sweep", false, "only remove what SIGKILLed demos left in the kernel (network namespaces, cgroups, runtime directories), then exit; every launch does this first")
	flag.BoolVar(&o.haproxy, "haproxy", true,
		"an HAProxy shard beside Traefik's, on a node of its own (node-haproxy) in every cluster (real nodes only)")
	flag.IntVar(&o.interval, "flip", 30, "seconds between cordoning and uncordoning node-2 of demo1, to show DNS following the nodes (0: never)")
	flag.Parse()
	o.haproxy = o.haproxy && !o.simulated
	if o.clusters < 1 || o.clusters > 5 || o.nodes < 1 || o.nodes > 5 {
		fmt.Fprintln(os.Stderr, "demo: --clusters and --nodes must be between 1 and 5")
		os.Exit(2)
	}
	if *sweep {
		if err := sweepDeadDemos(); err != nil {
			fmt.Fprintf(os.Stderr, "demo: --sweep: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if !isolated() {
		os.Exit(launch())
	}
	// The harness installs CRDs through envtest, which logs through controller-runtime: nothing
	// the demo's screen needs.
	ctrllog.SetLogger(logr.Discard())
	os.Exit(run(o))
}

// run is the demo inside its namespace. Its exit status is 0 when a signal stopped it.
func run(o options) int {
	if err := privateProc(); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	runDir, err := framework.RunDir()
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		return 1
	}
	// The harness's own messages go to a file; the terminal shows the summary.
	logf, err := os.OpenFile(filepath.Join(runDir, logName), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		return 1
	}
	defer logf.Close()
	s := framework.NewSession("demo", logf)
	out := newScreen(os.Stdout)
	code := 0
	func() {
		defer func() {
			if r := recover(); r != nil {
				var fatal *framework.SessionFatal
				if err, ok := r.(error); ok && errors.As(err, &fatal) {
					out.line("demo: %s (logs: %s)", fatal.Msg, runDir)
					fmt.Fprintf(logf, "demo: %s\n", fatal.Msg)
					code = 1
					return
				}
				panic(r)
			}
		}()
		d := start(ctx, s, o, out)
		if d != nil {
			d.loop(ctx, o)
		}
	}()
	stopped := stopAll(s)
	if code == 0 {
		msg := fmt.Sprintf("demo stopped: all %d processes it started are gone", stopped)
		out.line("%s", msg)
		fmt.Fprintln(logf, msg)
	}
	return code
}

// stopAll closes the session (every component, newest first) and counts what it stopped.
func stopAll(s *framework.Session) int {
	before := countProcesses()
	s.Close()
	return before - countProcesses()
}

// countProcesses counts the processes in the demo's PID namespace besides the demo itself.
func countProcesses() int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "1" || !isNumber(e.Name()) {
			continue
		}
		// Zombies (orphans that ended; the namespace's end reaps them) are gone already.
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			continue
		}
		n++
	}
	return n
}

func isNumber(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// screen writes to the terminal, ignoring a terminal that went away (a closed window).
type screen struct{ w io.Writer }

func newScreen(w io.Writer) *screen { return &screen{w: w} }

func (s *screen) line(format string, args ...any) { _, _ = fmt.Fprintf(s.w, format+"\n", args...) }
