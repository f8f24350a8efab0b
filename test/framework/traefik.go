package framework

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
)

// Traefik is a real Traefik process standing in for one router replica on a simulated node.
type Traefik struct {
	NodeIP string
	proc   *Process
}

var entryPointAddr = regexp.MustCompile(`^(--entryPoints\.[A-Za-z0-9]+\.address=):(\d+)$`)

// StartTraefik runs Traefik with exactly the flags of the router Deployment Shardgate deployed,
// its entry points bound to nodeIP (the node's loopback address), out-of-cluster API flags
// authenticating as the Deployment's ServiceAccount (so it has exactly the router's RBAC), and
// the container's security context applied (user, group, capabilities, no_new_privs, through
// setpriv): a rendered spec that could not bind its ports on a real kubelet fails here too.
func StartTraefik(t testing.TB, user *ControlPlane, d *appsv1.Deployment, nodeIP string) *Traefik {
	t.Helper()
	tr, err := startTraefik(TestDir(t), user, d, nodeIP)
	if err != nil {
		t.Fatalf("traefik on %s: %v", nodeIP, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- traefik %s (tail) ---\n%s", nodeIP, tr.proc.Tail(3000))
		}
		_ = tr.proc.Stop()
	})
	return tr
}

func startTraefik(testDir string, user *ControlPlane, d *appsv1.Deployment, nodeIP string) (*Traefik, error) {
	tools, err := LocateTools(ToolTraefik)
	if err != nil {
		return nil, err
	}
	dir, err := componentDir(testDir, "traefik-"+nodeIP)
	if err != nil {
		return nil, err
	}
	pod := d.Spec.Template.Spec
	if len(pod.Containers) == 0 {
		return nil, fmt.Errorf("deployment %s has no container", d.Name)
	}
	cred, err := ContainerCredentials(pod, pod.Containers[0])
	if err != nil {
		return nil, err
	}
	sp, err := setpriv()
	if err != nil {
		return nil, err
	}
	bin, err := sharedBinary(tools.Path(ToolTraefik))
	if err != nil {
		return nil, err
	}
	// The router's user must reach its files: the test directory is made traversable and the
	// CA file readable (nothing secret in either).
	if err := os.Chmod(testDir, 0o755); err != nil {
		return nil, err
	}
	token, err := ServiceAccountToken(user, d.Namespace, pod.ServiceAccountName)
	if err != nil {
		return nil, err
	}
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, user.Config.CAData, 0o644); err != nil {
		return nil, err
	}
	var args []string
	for _, a := range pod.Containers[0].Args {
		if m := entryPointAddr.FindStringSubmatch(a); m != nil {
			a = m[1] + nodeIP + ":" + m[2]
		}
		args = append(args, a)
	}
	args = append(args,
		"--providers.kubernetesingress.endpoint="+user.Host(),
		"--providers.kubernetesingress.token="+token,
		"--providers.kubernetesingress.certauthfilepath="+caFile,
	)
	// No inherited environment: KUBERNETES_SERVICE_HOST or KUBECONFIG would win over the flags.
	p, err := StartProcess(dir, ProcessSpec{Name: "traefik", Path: sp, Args: append(append(SetprivArgs(cred), bin), args...), Env: []string{"HOME=" + dir}})
	if err != nil {
		return nil, err
	}
	tr := &Traefik{NodeIP: nodeIP, proc: p}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := waitFor(ctx, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		if exited, err := p.Exited(); exited {
			return false, fmt.Errorf("traefik exited: %w\n%s", err, p.Tail(2000))
		}
		resp, err := http.Get("http://" + nodeIP + ":9000/ping")
		if err != nil {
			return false, nil //nolint:nilerr // not up yet: keep polling
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}); err != nil {
		_ = p.Stop()
		return nil, err
	}
	return tr, nil
}

var (
	sharedMu   sync.Mutex
	sharedBins = map[string]string{}
)

// sharedBinary returns a copy of the tool binary at path that any user can run (the tool cache
// may live under a home directory only root can enter), made once per test binary.
func sharedBinary(path string) (string, error) {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if p, ok := sharedBins[path]; ok {
		return p, nil
	}
	root, err := RunDir()
	if err != nil {
		return "", err
	}
	dir, err := componentDir(root, "bin")
	if err != nil {
		return "", err
	}
	if err := os.Chmod(root, 0o755); err != nil {
		return "", err
	}
	dst := filepath.Join(dir, fmt.Sprintf("%s-%d", filepath.Base(path), os.Getpid()))
	if err := copyFile(path, dst, 0o755); err != nil {
		return "", err
	}
	sharedBins[path] = dst
	return dst, nil
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// ServiceAccountToken asks the API server for a short-lived token of a ServiceAccount.
func ServiceAccountToken(cp *ControlPlane, ns, sa string) (string, error) {
	cs, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return "", err
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token for %s/%s: %w", ns, sa, err)
	}
	return tr.Status.Token, nil
}

// Stop ends the process (a router going away).
func (tr *Traefik) Stop() error { return tr.proc.Stop() }

// Backend is a real HTTP server on a loopback address that answers every request with its name.
type Backend struct {
	Addr string // ip:port
	srv  *http.Server
}

// StartBackend serves "hello from <name>" on ip (a free port) until t ends.
func StartBackend(t testing.TB, ip, name string) *Backend {
	t.Helper()
	port, err := FreePortOn(ip)
	if err != nil {
		t.Fatal(err)
	}
	b := &Backend{Addr: fmt.Sprintf("%s:%d", ip, port)}
	b.srv = &http.Server{Addr: b.Addr, ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s (host %s)\n", name, r.Host)
	})}
	ln, err := listen(b.Addr)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = b.srv.Serve(ln) }()
	t.Cleanup(func() { _ = b.srv.Close() })
	return b
}

// ExposeBackend makes b reachable in the user cluster as Service ns/name port 80: a selector-less
// Service with an FQDN EndpointSlice (the API server refuses loopback IPs in IP slices).
func ExposeBackend(ctx context.Context, user *ControlPlane, ns, name string, b *Backend) error {
	ip, port, err := splitHostPort(b.Addr)
	if err != nil {
		return err
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intOrPort(port)}}}}
	if err := user.Client.Create(ctx, svc); err != nil {
		return err
	}
	return user.Client.Create(ctx, fqdnSlice(ns, name, ip, port))
}

// StartRouters runs one real Traefik per router pod of each named shard in user, on the pod's
// node address, once the shard's router Deployment exists and is ready.
func StartRouters(ctx context.Context, t testing.TB, user *ControlPlane, shards ...string) {
	t.Helper()
	for _, shard := range shards {
		d := &appsv1.Deployment{}
		key := client.ObjectKey{Namespace: names.Namespace, Name: names.RouterName(shard)}
		wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		err := waitFor(wctx, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
			if err := user.Client.Get(ctx, key, d); err != nil {
				return false, err
			}
			return d.Spec.Replicas != nil && d.Status.ReadyReplicas == *d.Spec.Replicas, nil
		})
		cancel()
		if err != nil {
			t.Fatalf("router %s not ready: %v", key.Name, err)
		}
		pods := &corev1.PodList{}
		if err := user.Client.List(ctx, pods, client.InNamespace(names.Namespace), client.MatchingLabels{v1alpha1.ShardLabel: shard}); err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			StartTraefik(t, user, d, p.Status.HostIP)
		}
	}
}
