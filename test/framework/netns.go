package framework

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Network namespaces the harness creates (ip netns add) and deletes; nothing they hold reaches
// beyond them, so any address is fine inside.

// netnsPath is where ip(8) keeps a named network namespace.
func netnsPath(name string) string { return filepath.Join("/run/netns", name) }

// ip runs ip(8) with args and returns an error that includes its output.
func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// inNetns runs f on an OS thread that has entered the network namespace at path, then moves the
// thread back to its own namespace. Sockets f opens stay in the namespace it entered.
//
// The thread must come back rather than end: a child process started with Pdeathsig (every
// harness process) is killed when the thread that started it ends, and any thread may have
// started one. Only when the way back fails is the thread left locked, to end with this goroutine.
func inNetns(path string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		self, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer unix.Close(self)
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("open %s: %w", path, err)
			return
		}
		err = unix.Setns(fd, unix.CLONE_NEWNET)
		unix.Close(fd)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("setns %s: %w", path, err)
			return
		}
		ferr := f()
		if err := unix.Setns(self, unix.CLONE_NEWNET); err == nil {
			runtime.UnlockOSThread()
		} // else: stays locked and ends with this goroutine, never reused in the wrong namespace
		errc <- ferr
	}()
	return <-errc
}

// DialInNetns dials addr from inside the network namespace at path.
func DialInNetns(ctx context.Context, path, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := inNetns(path, func() error {
		var err error
		c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// forwarder accepts TCP connections on a listener (opened in some network namespace) and
// connects each to a target in the harness' own namespace.
type forwarder struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup
}

// forwardFromNetns listens on listen inside the namespace at path and forwards every connection
// to target (dialled from the harness' namespace): how nodes and pods in namespaces reach an API
// server that listens on the harness' loopback.
func forwardFromNetns(path, listen, target string) (*forwarder, error) {
	f := &forwarder{target: target}
	if err := inNetns(path, func() error {
		var err error
		f.ln, err = net.Listen("tcp", listen)
		return err
	}); err != nil {
		return nil, err
	}
	f.wg.Add(1)
	go f.serve()
	return f, nil
}

func (f *forwarder) serve() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			d, err := net.Dial("tcp", f.target)
			if err != nil {
				return
			}
			defer d.Close()
			go func() { _, _ = io.Copy(d, c); _ = d.(*net.TCPConn).CloseWrite() }()
			_, _ = io.Copy(c, d)
		}()
	}
}

func (f *forwarder) stop() {
	_ = f.ln.Close()
	f.wg.Wait()
}

// sysctlInNetns sets a namespaced sysctl (net.*) inside the namespace at path.
func sysctlInNetns(path, key, value string) error {
	return inNetns(path, func() error {
		return os.WriteFile(filepath.Join("/proc/sys", strings.ReplaceAll(key, ".", "/")), []byte(value), 0o644)
	})
}
