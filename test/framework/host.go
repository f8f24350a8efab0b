package framework

import (
	"context"
	"net"
	"net/http"
	"strings"
	"time"
)

// Host is a bare machine on a fabric: a network namespace with eth0 on br0 and nothing running,
// for components that run outside Kubernetes (keepalived and its agent with a router stand-in).
type Host struct {
	Name string
	IP   string
	ns   string
	f    *Fabric
}

// AddHost attaches a bare host at ip (in 10.123.0.0/24, not a node's or the client's address).
// It is deleted with the fabric.
func (f *Fabric) AddHost(name, addr string) (*Host, error) {
	ns, err := f.attach(name, addr)
	if err != nil {
		return nil, err
	}
	return &Host{Name: name, IP: addr, ns: ns, f: f}, nil
}

// Start runs spec inside the host's namespace (ip netns exec replaces itself with the program, so
// the process is spec's own and stops like any harness process). Its log goes to the test's
// directory under the host's name.
func (h *Host) Start(spec ProcessSpec) (*Process, error) {
	spec.Args = append([]string{"netns", "exec", h.ns, spec.Path}, spec.Args...)
	spec.Path = "/usr/sbin/ip"
	dir, err := componentDir(h.f.dir, "host-"+h.Name)
	if err != nil {
		return nil, err
	}
	return StartProcess(dir, spec)
}

// SetLink takes the host's eth0 down or up (a NIC or cable failure, seen from the L2 segment).
func (h *Host) SetLink(up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	return ip("-n", h.ns, "link", "set", "eth0", state)
}

// Addresses lists the IPv4 addresses on the host's eth0 (a VIP shows up here on its holder).
func (h *Host) Addresses() ([]string, error) {
	var out []string
	err := inNetns(netnsPath(h.ns), func() error {
		i, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		addrs, err := i.Addrs()
		if err != nil {
			return err
		}
		for _, a := range addrs {
			if s, _, ok := strings.Cut(a.String(), "/"); ok && !strings.Contains(s, ":") {
				out = append(out, s)
			}
		}
		return nil
	})
	return out, err
}

// GetQuick sends GET http://addr/ (with Host host, or addr when empty) from the client namespace
// with a short timeout and returns the status and the start of the body (an error only when no
// answer came): the probe of a looping client during failover, where a hung server must count
// as a failure within the timeout.
func (f *Fabric) GetQuick(ctx context.Context, addr, host string, timeout time.Duration) (int, string, error) {
	return f.GetWithin(ctx, addr, host, timeout, timeout)
}

// GetWithin is GetQuick with separate bounds: the connection must be made within connect (the
// address is held and something listens), the answer must come within total.
func (f *Fabric) GetWithin(ctx context.Context, addr, host string, connect, total time.Duration) (int, string, error) {
	client := &http.Client{Timeout: total, Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
			ctx, cancel := context.WithTimeout(ctx, connect)
			defer cancel()
			return DialInNetns(ctx, netnsPath(f.netns("client")), network, a)
		},
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/", nil)
	if err != nil {
		return 0, "", err
	}
	if host != "" {
		req.Host = host
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	buf := make([]byte, 512)
	n, _ := resp.Body.Read(buf)
	return resp.StatusCode, string(buf[:n]), nil
}
