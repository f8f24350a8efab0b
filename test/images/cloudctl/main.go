// Command cloudctl is the harness' ClusterRoutedIPClass Job image: it calls the simulated cloud
// (test/simcloud) with the inputs Shardgate gives a class's Jobs, the way a provider's CLI would.
//
//	cloudctl assign     SHARDGATE_ROUTED_IP to SHARDGATE_NODE_PROVIDER_ID
//	cloudctl firewall   set the firewall to SHARDGATE_FIREWALL_RULES
//
// CLOUD_URL and CLOUD_TOKEN come from the class's Secret. A failure exits 1 and leaves the cloud's
// answer in the termination log.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

func main() {
	if err := run(); err != nil {
		msg := err.Error()
		_ = os.WriteFile("/dev/termination-log", []byte(msg), 0o644)
		fmt.Fprintln(os.Stderr, msg)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) != 2 {
		return fmt.Errorf("usage: cloudctl assign|firewall")
	}
	url, token := os.Getenv("CLOUD_URL"), os.Getenv("CLOUD_TOKEN")
	var method, path string
	var body []byte
	switch os.Args[1] {
	case "assign":
		method, path = http.MethodPost, "/v1/routed_ips/"+os.Getenv("SHARDGATE_ROUTED_IP")+"/assign"
		body, _ = json.Marshal(map[string]string{"providerID": os.Getenv("SHARDGATE_NODE_PROVIDER_ID")})
	case "firewall":
		method, path, body = http.MethodPut, "/v1/firewall", []byte(os.Getenv("SHARDGATE_FIREWALL_RULES"))
	default:
		return fmt.Errorf("unknown command %q", os.Args[1])
	}
	req, err := http.NewRequest(method, url+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(b))
	}
	fmt.Printf("%s %s: %s\n", method, path, resp.Status)
	return nil
}
