package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// SimCloud is the simulated cloud of the routed-IP tests (test/simcloud) running on a bare host
// of a fabric: its API really moves routed addresses between the fabric's nodes (the fabric
// namespace routes each address to its holder) and keeps the firewall map it is given.
type SimCloud struct {
	// URL of the API, reachable from the fabric (pods of the seed's node included).
	URL   string
	Token string
	host  *Host
	proc  *Process
}

// SimCloudState is what the cloud holds.
type SimCloudState struct {
	RoutedIPs   map[string]string `json:"routedIPs"` // address → providerID
	Firewall    []FirewallRule    `json:"firewall"`
	AssignCalls int               `json:"assignCalls"`
}

// FirewallRule as the cloud keeps it.
type FirewallRule struct {
	Port        int32    `json:"port"`
	Protocol    string   `json:"protocol"`
	ProviderIDs []string `json:"providerIDs"`
}

const simCloudIP = "10.123.0.5"

// StartSimCloud starts the cloud on f for nodes (their provider IDs are their instances). It
// stops with the fabric's processes (the test's cleanup).
func StartSimCloud(f *Fabric, nodes []*RealNode) (*SimCloud, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	run, err := RunDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(run, "simcloud-")
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, "simcloud")
	cmd := exec.Command("go", "build", "-o", bin, "./test/simcloud")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build simcloud: %w\n%s", err, out)
	}
	h, err := f.AddHost("cloud", simCloudIP)
	if err != nil {
		return nil, err
	}
	c := &SimCloud{URL: "http://" + simCloudIP + ":8080", Token: "simcloud-token-" + f.ID, host: h}
	args := []string{"-listen=" + simCloudIP + ":8080", "-token=" + c.Token, "-fabric-netns=" + f.netns("fabric")}
	for _, n := range nodes {
		args = append(args, fmt.Sprintf("-instance=%s=%s,%s", n.ProviderID(), filepath.Base(n.Netns), n.IP))
	}
	if c.proc, err = h.Start(ProcessSpec{Name: "simcloud", Path: bin, Args: args}); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return c, waitFor(ctx, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		_, err := c.State(ctx)
		return err == nil, nil
	})
}

// Stop stops the cloud's process.
func (c *SimCloud) Stop() error { return c.proc.Stop() }

func (c *SimCloud) do(ctx context.Context, method, path string, out any) error {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
			return DialInNetns(ctx, netnsPath(c.host.f.netns("client")), network, a)
		}}}
	req, err := http.NewRequestWithContext(ctx, method, c.URL+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %s", method, path, resp.Status)
	}
	if out != nil {
		return json.NewDecoder(resp.Body).Decode(out)
	}
	return nil
}

// State reads what the cloud holds.
func (c *SimCloud) State(ctx context.Context) (SimCloudState, error) {
	var s SimCloudState
	return s, c.do(ctx, http.MethodGet, "/v1/state", &s)
}

// FailAssign makes the next n assign calls fail with 500.
func (c *SimCloud) FailAssign(ctx context.Context, n int) error {
	return c.do(ctx, http.MethodPost, fmt.Sprintf("/admin/fail-assign?count=%d", n), nil)
}
