// Package statuspage serves the administrator's view of the seed: an HTML page listing every
// user cluster (filtered, paged), a page per cluster, and the same data as JSON for dashboards.
// Pages are rendered on the server from the controller's cache, with no external assets, so
// they work on an air-gapped seed and cost one cached list per request.
package statuspage

import (
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusterview"
)

//go:embed templates/*.html
var templateFS embed.FS

// Handler serves the pages and the JSON endpoints from Reader (the manager's cache).
type Handler struct {
	Reader client.Reader
	Now    func() time.Time
	pages  *template.Template
}

// NewHandler parses the templates once.
func NewHandler(r client.Reader) (*Handler, error) {
	h := &Handler{Reader: r, Now: time.Now}
	t, err := template.New("").Funcs(template.FuncMap{
		"ago":     h.ago,
		"until":   h.until,
		"join":    strings.Join,
		"pageURL": pageURL,
		"add1":    func(i int) int { return i + 1 },
		"sub1":    func(i int) int { return i - 1 },
	}).ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	h.pages = t
	return h, nil
}

// Routes: / (the list), /clusters/{namespace}/{name}, /api/v1/clusters and
// /api/v1/clusters/{namespace}/{name}.
func (h *Handler) Routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", h.list)
	mux.HandleFunc("GET /clusters/{namespace}/{name}", h.cluster)
	mux.HandleFunc("GET /api/v1/clusters", h.listJSON)
	mux.HandleFunc("GET /api/v1/clusters/{namespace}/{name}", h.clusterJSON)
	return mux
}

// listView is what the list template renders (.Page.Page is the page number: the embedded
// Page's own field).
type listView struct {
	clusterview.Page
	Query clusterview.Query
}

func (h *Handler) list(w http.ResponseWriter, r *http.Request) {
	page, q, err := h.selectClusters(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	h.render(w, "list.html", listView{Page: page, Query: q})
}

func (h *Handler) listJSON(w http.ResponseWriter, r *http.Request) {
	page, _, err := h.selectClusters(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	writeJSON(w, page)
}

func (h *Handler) cluster(w http.ResponseWriter, r *http.Request) {
	c, status, err := h.getCluster(r)
	if err != nil {
		http.Error(w, err.Error(), status)
		return
	}
	h.render(w, "cluster.html", c)
}

func (h *Handler) clusterJSON(w http.ResponseWriter, r *http.Request) {
	c, status, err := h.getCluster(r)
	if err != nil {
		http.Error(w, err.Error(), status)
		return
	}
	writeJSON(w, c)
}

func (h *Handler) selectClusters(r *http.Request) (clusterview.Page, clusterview.Query, error) {
	q := parseQuery(r)
	var list v1alpha1.ClusterIngressList
	// Read-only: the cache's objects are summarised, never modified, so no copies are made.
	if err := h.Reader.List(r.Context(), &list, client.UnsafeDisableDeepCopy); err != nil {
		return clusterview.Page{}, q, fmt.Errorf("listing ClusterIngresses: %w", err)
	}
	all := make([]clusterview.Cluster, 0, len(list.Items))
	for i := range list.Items {
		all = append(all, clusterview.FromClusterIngress(&list.Items[i]))
	}
	return clusterview.Select(all, q), q, nil
}

func (h *Handler) getCluster(r *http.Request) (clusterview.Cluster, int, error) {
	key := types.NamespacedName{Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
	ci := &v1alpha1.ClusterIngress{}
	if err := h.Reader.Get(r.Context(), key, ci); err != nil {
		if apierrors.IsNotFound(err) {
			return clusterview.Cluster{}, http.StatusNotFound, fmt.Errorf("no ClusterIngress %s", key)
		}
		return clusterview.Cluster{}, http.StatusServiceUnavailable, fmt.Errorf("reading ClusterIngress %s: %w", key, err)
	}
	return clusterview.FromClusterIngress(ci), http.StatusOK, nil
}

// parseQuery reads ?q=&problems=1&page=&size=; anything unparsable is the default.
func parseQuery(r *http.Request) clusterview.Query {
	v := r.URL.Query()
	q := clusterview.Query{Search: v.Get("q"), Problems: v.Get("problems") != "" && v.Get("problems") != "0"}
	q.Page, _ = strconv.Atoi(v.Get("page"))
	q.Size, _ = strconv.Atoi(v.Get("size"))
	return q
}

// pageURL links to another page of the same query.
func pageURL(q clusterview.Query, page int) template.URL {
	v := make([]string, 0, 4)
	if q.Search != "" {
		v = append(v, "q="+template.URLQueryEscaper(q.Search))
	}
	if q.Problems {
		v = append(v, "problems=1")
	}
	if q.Size > 0 {
		v = append(v, "size="+strconv.Itoa(q.Size))
	}
	v = append(v, "page="+strconv.Itoa(page))
	return template.URL("?" + strings.Join(v, "&")) //nolint:gosec // every part is escaped or a number
}

func (h *Handler) render(w http.ResponseWriter, name string, data any) {
	var b strings.Builder
	if err := h.pages.ExecuteTemplate(&b, name, data); err != nil {
		http.Error(w, "rendering: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	// No script, style only inline: nothing else may load (a hostile reason string cannot either).
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = fmt.Fprint(w, b.String())
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// ago and until print durations a person reads at a glance ("3m ago", "in 29d").
func (h *Handler) ago(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return short(h.Now().Sub(t)) + " ago"
}

func (h *Handler) until(t *time.Time) string {
	if t == nil {
		return "—"
	}
	d := t.Sub(h.Now())
	if d < 0 {
		return "expired " + short(-d) + " ago"
	}
	return "in " + short(d)
}

func short(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
