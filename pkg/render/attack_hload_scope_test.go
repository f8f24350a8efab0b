package render

import (
	"net/url"
	"testing"
)

// TestAttackHLoadHAProxyScrapesEveryServer: the HAProxy load reporter scrapes the exporter
// unscoped, so every 5 s it pulls every backend's and every server's series although it reads
// only global and frontend ones. The controller gives each backend (one per tenant Service port)
// 42 server slots (scale-server-slots) and HAProxy 3.0 exports some 60 series per server: about
// 42 x 60 x 70 B ~ 170 KiB per Service, so a shard with ~100 tenant Services makes every scrape of
// every router hit routerload's 16 MiB cut (its comment says "a few hundred KiB at most"). Tenants
// decide that size by creating Services, and the router pays for generating it. HAProxy's
// exporter takes ?scope=global&scope=frontend to serve only what the reporter reads.
func TestAttackHLoadHAProxyScrapesEveryServer(t *testing.T) {
	m := HAProxy{}.LoadMetrics()
	u, err := url.Parse(m.Path)
	if err != nil {
		t.Fatal(err)
	}
	scopes := u.Query()["scope"]
	if len(scopes) == 0 {
		t.Fatalf("HAProxy's metrics are read from %q: every backend and server series, every 5 s, for two figures", m.Path)
	}
	for _, s := range scopes {
		if s != "global" && s != "frontend" {
			t.Errorf("scope %q is read and never used", s)
		}
	}
}
