package framework

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ClusterLabel marks, in a ClusterMux's backend, the objects of one simulated cluster.
const ClusterLabel = "sim.shardgate.io/cluster"

// ClusterMux serves many distinct user clusters from one real kube-apiserver, so that a
// thousand clusters fit on one machine (each real API server costs ~275 MiB). Cluster ID's
// server is https://<mux>/c/<ID> with TLS server name <ID>.sim.shardgate (a client keeps one
// connection per cluster, as with real clusters) and its own bearer token; any other token is
// refused. Each cluster sees its own world:
//   - Nodes and Namespaces are filtered by ClusterLabel (the mux labels what a cluster creates);
//     namespace X is <ID>-X in the backend, renamed both ways in paths, bodies, field selectors
//     and watch events;
//   - every namespaced kind lives in the renamed namespaces, and lists across namespaces are
//     filtered by ClusterLabel, which the mux sets on every object a cluster writes;
//   - the remaining cluster-scoped kinds (RBAC, IngressClasses, admission policies, CRDs) are
//     shared: Shardgate renders them alike for every cluster of one backend.
//
// The backend answers everything; the mux only rewrites JSON (it asks the backend for JSON).
type ClusterMux struct {
	Backend *ControlPlane
	caPEM   []byte
	srv     *http.Server
	addr    string
	// proxies reach the backend, each over its own connection; a cluster always uses the same
	// one (proxyFor).
	proxies []http.RoundTripper
	base    *url.URL

	mu     sync.Mutex
	tokens map[string]string // token -> cluster ID
}

// sharedKinds are the cluster-scoped resources every cluster of a mux shares.
var sharedKinds = map[string]bool{
	"clusterroles": true, "clusterrolebindings": true, "ingressclasses": true,
	"validatingadmissionpolicies": true, "validatingadmissionpolicybindings": true,
	"customresourcedefinitions": true, "selfsubjectreviews": true, "selfsubjectaccessreviews": true,
	"selfsubjectrulesreviews": true, "tokenreviews": true, "subjectaccessreviews": true,
}

// StartClusterMux serves simulated clusters from backend until t ends.
func StartClusterMux(t testing.TB, backend *ControlPlane) *ClusterMux {
	t.Helper()
	ca, err := newTestCA("cluster-mux")
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.serving("cluster-mux", []string{"*.sim.shardgate"}, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	// Each cluster keeps twelve watches open: 250 clusters on one connection would be 3,000
	// streams, over kube-apiserver's limit per connection (1,000). Clusters are spread over
	// backendConns connections of one each: Go's HTTP client otherwise dials a connection for
	// every request that finds none yet and keeps only one, so a thousand clusters engaged at
	// once made ~2,400 TLS handshakes to the backends (CPU the user clusters would not cost).
	tlsConfig, err := rest.TLSConfigFor(backend.Config)
	if err != nil {
		t.Fatal(err)
	}
	var proxies []http.RoundTripper
	for range backendConns {
		one := &http.Transport{TLSClientConfig: tlsConfig.Clone(), ForceAttemptHTTP2: true, MaxConnsPerHost: 1}
		rt, err := rest.HTTPWrappersForConfig(backend.Config, one)
		if err != nil {
			t.Fatal(err)
		}
		proxies = append(proxies, rt)
	}
	base, err := url.Parse(backend.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := &ClusterMux{Backend: backend, caPEM: ca.pem, addr: l.Addr().String(), proxies: proxies, base: base, tokens: map[string]string{}}
	m.srv = &http.Server{Handler: m, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}}}
	go func() { _ = m.srv.ServeTLS(l, "", "") }()
	t.Cleanup(func() { _ = m.srv.Close() })
	return m
}

// backendConns is how many connections a mux keeps to its backend: 250 clusters of twelve
// watches each fit with room to spare.
const backendConns = 16

// proxyFor is the backend connection cluster id's requests take.
func (m *ClusterMux) proxyFor(id string) http.RoundTripper {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return m.proxies[h.Sum32()%uint32(len(m.proxies))]
}

// systemNamespaces are the namespaces every cluster has from its start.
var systemNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

// AddCluster creates cluster id's system namespaces and returns its kubeconfig.
func (m *ClusterMux) AddCluster(ctx context.Context, id string) ([]byte, error) {
	for _, ns := range systemNamespaces {
		err := m.Backend.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: id + "-" + ns, Labels: map[string]string{ClusterLabel: id}}})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
	}
	return m.Kubeconfig(id)
}

// Kubeconfig returns cluster id's kubeconfig (a DNS label; AddCluster creates it).
func (m *ClusterMux) Kubeconfig(id string) ([]byte, error) {
	token := "sim-" + id + "-" + strconv.Itoa(len(id)*7919)
	m.mu.Lock()
	m.tokens[token] = id
	m.mu.Unlock()
	kc := clientcmdapi.NewConfig()
	kc.Clusters[id] = &clientcmdapi.Cluster{Server: "https://" + m.addr + "/c/" + id, CertificateAuthorityData: m.caPEM, TLSServerName: id + ".sim.shardgate"}
	kc.AuthInfos[id] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts[id] = &clientcmdapi.Context{Cluster: id, AuthInfo: id}
	kc.CurrentContext = id
	return clientcmd.Write(*kc)
}

// CreateNode creates a Ready node of cluster id with the given InternalIP.
func (m *ClusterMux) CreateNode(ctx context.Context, id, name, ip string) error {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: id + "-" + name, Labels: map[string]string{ClusterLabel: id}}}
	if err := m.Backend.Client.Create(ctx, n); err != nil {
		return err
	}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "Sim"}}
	return m.Backend.Client.Status().Update(ctx, n)
}

// SetNodeReady sets the Ready condition of node name of cluster id.
func (m *ClusterMux) SetNodeReady(ctx context.Context, id, name string, ready bool) error {
	n := &corev1.Node{}
	if err := m.Backend.Client.Get(ctx, client.ObjectKey{Name: id + "-" + name}, n); err != nil {
		return err
	}
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st, Reason: "Sim"}}
	return m.Backend.Client.Status().Update(ctx, n)
}

// route is what the mux makes of a cluster's request path.
type route struct {
	id       string
	path     string // the cluster's path (after /c/<id>)
	resource string // e.g. "deployments", "namespaces", "nodes"
	// namespaceObject: the request is about Namespace objects themselves.
	namespaceObject bool
	shared          bool
	collection      bool
}

func (m *ClusterMux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/c/")
	if !ok {
		http.Error(w, "no cluster in the path", http.StatusNotFound)
		return
	}
	id, p, _ := strings.Cut(rest, "/")
	m.mu.Lock()
	owner := m.tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
	m.mu.Unlock()
	if owner == "" || owner != id {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401}`))
		return
	}
	rt := parseRoute(id, "/"+p)
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.URL = &url.URL{Scheme: m.base.Scheme, Host: m.base.Host, Path: rt.backendPath(), RawQuery: m.query(rt, r.URL.Query()).Encode()}
	out.Host = m.base.Host
	out.Header.Del("Authorization")
	out.Header.Del("Accept-Encoding")
	out.Header.Set("Accept", "application/json")
	if r.Body != nil && r.ContentLength != 0 && (r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if strings.Contains(r.Header.Get("Content-Type"), "protobuf") {
			// controller-runtime writes built-in kinds as protobuf: rewritten as JSON.
			if body, err = protobufToJSON(body); err != nil {
				http.Error(w, "the cluster mux cannot decode the body: "+err.Error(), http.StatusUnsupportedMediaType)
				return
			}
			out.Header.Set("Content-Type", "application/json")
		}
		body = rt.rewriteRequest(body)
		out.Body, out.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		out.Header.Set("Content-Length", strconv.Itoa(len(body)))
	}
	resp, err := m.proxyFor(id).RoundTrip(out)
	if err != nil {
		http.Error(w, "backend: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		if k != "Content-Length" {
			w.Header()[k] = v
		}
	}
	w.WriteHeader(resp.StatusCode)
	if r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1" {
		rt.streamWatch(w, resp.Body)
		return
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return
	}
	_, _ = w.Write(rt.rewriteResponse(body))
}

func protobufToJSON(body []byte) ([]byte, error) {
	obj, gvk, err := clientgoscheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
	if err != nil {
		return nil, err
	}
	obj.GetObjectKind().SetGroupVersionKind(*gvk)
	return json.Marshal(obj)
}

func parseRoute(id, p string) route {
	rt := route{id: id, path: p}
	segs := strings.Split(strings.Trim(p, "/"), "/")
	var rest []string
	switch {
	case len(segs) >= 2 && segs[0] == "api":
		rest = segs[2:]
	case len(segs) >= 3 && segs[0] == "apis":
		rest = segs[3:]
	default:
		rt.shared = true // /version, /readyz, discovery
		return rt
	}
	if len(rest) == 0 {
		rt.shared = true
		return rt
	}
	if rest[0] == "namespaces" && len(rest) >= 3 {
		rt.resource, rt.collection = rest[2], len(rest) == 3
		return rt
	}
	rt.resource, rt.collection = rest[0], len(rest) == 1
	rt.namespaceObject = rest[0] == "namespaces"
	rt.shared = sharedKinds[rt.resource]
	return rt
}

// backendPath renames the namespace in the path (namespaces/X → namespaces/<id>-X).
func (rt route) backendPath() string {
	segs := strings.Split(rt.path, "/")
	for i := 0; i+1 < len(segs); i++ {
		if segs[i] == "namespaces" && segs[i+1] != "" && (i == 0 || segs[i-1] == "v1" || strings.HasPrefix(segs[i-1], "v")) {
			segs[i+1] = rt.id + "-" + segs[i+1]
			break
		}
	}
	return strings.Join(segs, "/")
}

// query filters collections by the cluster's label and renames namespaces in field selectors.
func (m *ClusterMux) query(rt route, q url.Values) url.Values {
	if rt.collection && !rt.shared {
		sel := ClusterLabel + "=" + rt.id
		if s := q.Get("labelSelector"); s != "" {
			sel = s + "," + sel
		}
		q.Set("labelSelector", sel)
	}
	if fs := q.Get("fieldSelector"); fs != "" {
		var terms []string
		for _, term := range strings.Split(fs, ",") {
			if v, ok := strings.CutPrefix(term, "metadata.namespace="); ok {
				term = "metadata.namespace=" + rt.id + "-" + v
			}
			if v, ok := strings.CutPrefix(term, "metadata.name="); ok && rt.namespaceObject {
				term = "metadata.name=" + rt.id + "-" + v
			}
			terms = append(terms, term)
		}
		q.Set("fieldSelector", strings.Join(terms, ","))
	}
	return q
}

// rewriteRequest renames namespaces in a written object and labels it as the cluster's.
func (rt route) rewriteRequest(body []byte) []byte {
	if rt.shared {
		return body
	}
	var obj map[string]any
	if json.Unmarshal(body, &obj) != nil {
		return body // a JSON patch (a list) or YAML: passed as it is
	}
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		obj["metadata"] = meta
	}
	if ns, ok := meta["namespace"].(string); ok && ns != "" {
		meta["namespace"] = rt.id + "-" + ns
	}
	if name, ok := meta["name"].(string); ok && name != "" && rt.namespaceObject {
		meta["name"] = rt.id + "-" + name
	}
	if rt.resource != "nodes" { // nodes are the bench's, labelled when created
		labels, _ := meta["labels"].(map[string]any)
		if labels == nil {
			labels = map[string]any{}
		}
		labels[ClusterLabel] = rt.id
		meta["labels"] = labels
	}
	for _, ref := range []string{"involvedObject", "regarding"} { // Events
		if o, ok := obj[ref].(map[string]any); ok {
			if ns, ok := o["namespace"].(string); ok && ns != "" {
				o["namespace"] = rt.id + "-" + ns
			}
		}
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return body
	}
	return out
}

// rewriteResponse gives the cluster its own names back in an object or a list.
func (rt route) rewriteResponse(body []byte) []byte {
	if rt.shared {
		return body
	}
	var obj map[string]any
	if json.Unmarshal(body, &obj) != nil {
		return body
	}
	rt.restore(obj)
	out, err := json.Marshal(obj)
	if err != nil {
		return body
	}
	return out
}

func (rt route) restore(obj map[string]any) {
	if items, ok := obj["items"].([]any); ok {
		for _, it := range items {
			if o, ok := it.(map[string]any); ok {
				rt.restoreObject(o)
			}
		}
		return
	}
	rt.restoreObject(obj)
}

func (rt route) restoreObject(obj map[string]any) {
	prefix := rt.id + "-"
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		return
	}
	if ns, ok := meta["namespace"].(string); ok {
		meta["namespace"] = strings.TrimPrefix(ns, prefix)
	}
	if rt.namespaceObject || obj["kind"] == "Namespace" {
		if name, ok := meta["name"].(string); ok {
			meta["name"] = strings.TrimPrefix(name, prefix)
		}
	}
	for _, ref := range []string{"involvedObject", "regarding"} {
		if o, ok := obj[ref].(map[string]any); ok {
			if ns, ok := o["namespace"].(string); ok {
				o["namespace"] = strings.TrimPrefix(ns, prefix)
			}
		}
	}
}

// streamWatch rewrites a JSON watch stream event by event, flushing each.
func (rt route) streamWatch(w http.ResponseWriter, body io.Reader) {
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}
	dec := json.NewDecoder(body)
	enc := json.NewEncoder(w)
	for {
		var ev map[string]any
		if dec.Decode(&ev) != nil {
			return // the stream ended; the client watches again
		}
		if o, ok := ev["object"].(map[string]any); ok && !rt.shared {
			rt.restoreObject(o)
		}
		if enc.Encode(ev) != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
}

// Addr is the mux's host:port.
func (m *ClusterMux) Addr() string { return m.addr }

// String is the mux's address, for logs.
func (m *ClusterMux) String() string {
	return fmt.Sprintf("cluster mux %s → %s", m.addr, m.Backend.Name)
}
