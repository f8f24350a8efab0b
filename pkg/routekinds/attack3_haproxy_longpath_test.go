package routekinds

import (
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// haproxyMapRows parses a map file as HAProxy does when it loads one at (re)start
// (src/pattern.c pat_ref_read_from_file_smp): fgets(trash.area, trash.size, file), trash.size
// being tune.bufsize (16384 by default, not changed by Shardgate's HAProxy routers), so a line of
// 16384 bytes or more is read as several lines; each is "<key><spaces/tabs><value>".
func haproxyMapRows(file string) map[string]string {
	const bufsize = 16384
	rows := map[string]string{}
	for len(file) > 0 {
		n := strings.IndexByte(file, '\n') + 1
		if n == 0 || n > bufsize-1 {
			n = min(len(file), bufsize-1)
		}
		line := file[:n]
		file = file[n:]
		if strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimLeft(line, " \t")
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			continue
		}
		key, value, _ := strings.Cut(line, "\t")
		if k, v, ok := strings.Cut(key, " "); ok {
			key, value = k, v+"\t"+value
		}
		rows[key] = strings.Trim(value, " \t")
	}
	return rows
}

// TestAttack3HAProxyLongPathSplitsMapRow: the second round refuses paths with whitespace or
// control characters, but a row does not need a newline to become two: haproxytech's controller
// writes T's row `<host><path>\t\t\t<T's backend>` into path-exact.map (pkg/route/route.go,
// pathType Exact or ImplementationSpecific), and a row longer than HAProxy's buffer
// (api.BufferSize 16000 < row) also fails the runtime "add map" (CLI payload limit), so the
// controller reloads (pkg/haproxy/maps RefreshMaps) and HAProxy reads the file with fgets of
// tune.bufsize: the row's tail after byte 16383 is a line of its own. T's path of plain letters
// ending in "victim.c1.z/" thus adds the row `victim.c1.z/ -> T's backend`: another tenant's host
// served by T's Service. Neither the admission CEL ([\s\x00-\x1f\x7f]) nor Refusal bounds length.
func TestAttack3HAProxyLongPathSplitsMapRow(t *testing.T) {
	const host, victim, backend = "t.c1.z", "victim.c1.z/", "team_web_80"
	path := "/" + strings.Repeat("a", 16383-len(host)-1) + victim
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web"},
		Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("shardgate-haproxy"), Rules: []networkingv1.IngressRule{{
			Host: host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{Path: path, PathType: ptr.To(networkingv1.PathTypeExact),
					Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web",
						Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}}}
	// What the controller writes (route.go AddHostPathRoute, PATH_EXACT), beside a victim's row.
	file := "victim.c1.z/app\t\t\tvictim_app_80\n" + host + path + "\t\t\t" + backend + "\n"
	rows := haproxyMapRows(file)
	if rows[victim] != backend {
		t.Fatalf("the model does not reproduce the split: %v", len(rows))
	}
	if why := (Ingress{}).Refusal(ing); why == "" {
		t.Errorf("a path of %d plain characters is not refused on HAProxy shards: its map row is longer than "+
			"HAProxy's 16384-byte line buffer, and the row's tail is read as the row %q -> %q (another tenant's host "+
			"served by T's backend); refuse paths (host+path) longer than, say, 4096 bytes", len(path), victim, rows[victim])
	}
}
