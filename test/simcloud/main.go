// Command simcloud stands for a cloud provider's floating-IP and firewall API in the harness
// (the test's "cloud"): an HTTP API that really moves a routed address between the simulated
// instances (the fabric's node namespaces) and keeps the firewall map it is given.
//
// A routed IP is what DigitalOcean-style clouds do: the provider's router (the fabric namespace)
// routes the address to the instance holding it (a /32 route via the instance's own address),
// and the instance accepts it (the address on its loopback). Moving it replaces the route and
// the loopback addresses, so traffic follows at once.
//
//	POST /v1/routed_ips/{ip}/assign   {"providerID": "sim://…"}   assign (move) the address
//	PUT  /v1/firewall                 [{"port":80,"protocol":"TCP","providerIDs":[…]}]
//	GET  /v1/state                    {"routedIPs": {ip: providerID}, "firewall": […], "assignCalls": n}
//	POST /admin/fail-assign?count=N   the next N assign calls fail with 500 (fault injection)
//
// Every /v1 call needs "Authorization: Bearer <token>".
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"sync"
)

type instance struct{ netns, ip string }

type cloud struct {
	token, fabric string
	instances     map[string]instance // providerID →

	mu          sync.Mutex
	holders     map[string]string // routed IP → providerID
	firewall    json.RawMessage
	failAssign  int
	assignCalls int
}

func main() {
	c := &cloud{instances: map[string]instance{}, holders: map[string]string{}, firewall: json.RawMessage("[]")}
	listen := flag.String("listen", ":8080", "address to serve on")
	flag.StringVar(&c.token, "token", "", "bearer token every /v1 call must carry")
	flag.StringVar(&c.fabric, "fabric-netns", "", "network namespace of the provider's router")
	flag.Func("instance", "providerID=netns,ip of an instance (repeat)", func(v string) error {
		id, rest, ok1 := strings.Cut(v, "=")
		ns, ip, ok2 := strings.Cut(rest, ",")
		if !ok1 || !ok2 {
			return fmt.Errorf("want providerID=netns,ip")
		}
		c.instances[id] = instance{netns: ns, ip: ip}
		return nil
	})
	flag.Parse()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/routed_ips/{ip}/assign", c.auth(c.assign))
	mux.HandleFunc("PUT /v1/firewall", c.auth(c.setFirewall))
	mux.HandleFunc("GET /v1/state", c.auth(c.state))
	mux.HandleFunc("POST /admin/fail-assign", c.failNext)
	log.Printf("simcloud on %s with %d instances", *listen, len(c.instances))
	log.Fatal(http.ListenAndServe(*listen, mux))
}

func (c *cloud) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+c.token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h(w, r)
	}
}

func (c *cloud) assign(w http.ResponseWriter, r *http.Request) {
	addr, err := netip.ParseAddr(r.PathValue("ip"))
	if err != nil || !addr.Is4() {
		http.Error(w, "not an IPv4 address", http.StatusBadRequest)
		return
	}
	var body struct {
		ProviderID string `json:"providerID"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.assignCalls++
	to, ok := c.instances[body.ProviderID]
	if !ok {
		http.Error(w, "no instance "+body.ProviderID, http.StatusNotFound)
		return
	}
	if c.failAssign > 0 {
		c.failAssign--
		http.Error(w, "simulated cloud failure", http.StatusInternalServerError)
		return
	}
	ip := addr.String()
	if from, ok := c.instances[c.holders[ip]]; ok && c.holders[ip] != body.ProviderID {
		_ = run("ip", "-n", from.netns, "addr", "del", ip+"/32", "dev", "lo")
	}
	if err := run("ip", "-n", to.netns, "addr", "replace", ip+"/32", "dev", "lo"); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if err := run("ip", "-n", c.fabric, "route", "replace", ip+"/32", "via", to.ip); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	c.holders[ip] = body.ProviderID
	log.Printf("%s → %s", ip, body.ProviderID)
	w.WriteHeader(http.StatusNoContent)
}

func (c *cloud) setFirewall(w http.ResponseWriter, r *http.Request) {
	var rules json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&rules); err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.firewall = rules
	c.mu.Unlock()
	log.Printf("firewall: %s", rules)
	w.WriteHeader(http.StatusNoContent)
}

func (c *cloud) state(w http.ResponseWriter, _ *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = json.NewEncoder(w).Encode(map[string]any{"routedIPs": c.holders, "firewall": c.firewall, "assignCalls": c.assignCalls})
}

func (c *cloud) failNext(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.Atoi(r.URL.Query().Get("count"))
	if err != nil {
		http.Error(w, "count", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.failAssign = n
	c.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func run(name string, args ...string) error {
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, out)
	}
	return nil
}
