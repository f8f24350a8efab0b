package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

// ControlPlane is one real Kubernetes control plane (etcd + kube-apiserver through envtest), a
// seed or a user cluster, optionally with simulated nodes (kube-scheduler,
// kube-controller-manager, kwok) so that Deployments produce Ready pods.
type ControlPlane struct {
	Name string
	Dir  string
	// Config and Client act as a cluster admin (system:masters).
	Config *rest.Config
	Client client.Client
	// AdminKubeconfig is the path of a kubeconfig file for Config.
	AdminKubeconfig string

	env   *envtest.Environment
	mu    sync.Mutex
	sim   *simulatedNodes
	tools Tools
}

// ControlPlaneOptions configures StartControlPlane.
type ControlPlaneOptions struct {
	// CRDDirs are installed (and waited for) before StartControlPlane returns.
	CRDDirs []string
	// Scheme for Client; nil means Scheme().
	Scheme *runtime.Scheme
	// SimulatedNodes also starts kube-scheduler, kube-controller-manager and kwok.
	SimulatedNodes bool
	// RealNodes prepares the control plane for real nodes (AddRealNode): its serving certificate
	// also names the kubernetes Service address, and pods get service-account tokens.
	RealNodes bool
	// APIServerFlags are set on kube-apiserver (e.g. --runtime-config to switch an API off, as
	// older Kubernetes versions do not serve it).
	APIServerFlags map[string]string
}

// StartControlPlane starts a control plane named name for t and stops it when t ends.
func StartControlPlane(t testing.TB, name string, opts ControlPlaneOptions) *ControlPlane {
	t.Helper()
	cp, err := startControlPlane(TestDir(t), name, opts)
	if err != nil {
		t.Fatalf("control plane %s: %v", name, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			cp.logTails(t)
		}
		if err := cp.Stop(); err != nil {
			t.Errorf("stop control plane %s: %v", name, err)
		}
	})
	if opts.SimulatedNodes {
		if err := cp.startSimulatedNodes(); err != nil {
			t.Fatalf("simulated nodes for %s: %v", name, err)
		}
	}
	return cp
}

func startControlPlane(testDir, name string, opts ControlPlaneOptions) (*ControlPlane, error) {
	tools, err := LocateTools(ToolKubeAPIServer, ToolEtcd)
	if err != nil {
		return nil, err
	}
	dir, err := componentDir(testDir, name)
	if err != nil {
		return nil, err
	}
	apiLog, err := os.Create(filepath.Join(dir, "kube-apiserver.log"))
	if err != nil {
		return nil, err
	}
	etcdLog, err := os.Create(filepath.Join(dir, "etcd.log"))
	if err != nil {
		return nil, err
	}
	scheme := opts.Scheme
	if scheme == nil {
		scheme = Scheme()
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: tools.Dir,
		Scheme:                scheme,
		CRDDirectoryPaths:     opts.CRDDirs,
		ErrorIfCRDPathMissing: true,
		// The machine has two cores and may start several control planes at once.
		ControlPlaneStartTimeout: 90 * time.Second,
		// kube-apiserver drains watches for a long time on SIGTERM; after this it is SIGKILLed,
		// which is fine for throwaway test clusters (see stopErr).
		ControlPlaneStopTimeout: 5 * time.Second,
		ControlPlane: envtest.ControlPlane{
			// An explicit CertDir and DataDir survive an API server restart, so a restarted
			// server keeps its address, certificates, client CA and data.
			APIServer: &envtest.APIServer{CertDir: filepath.Join(dir, "apiserver"), Out: apiLog, Err: apiLog},
			Etcd:      &envtest.Etcd{DataDir: filepath.Join(dir, "etcd"), Out: etcdLog, Err: etcdLog},
		},
	}
	for k, v := range opts.APIServerFlags {
		env.ControlPlane.APIServer.Configure().Set(k, v)
	}
	for _, d := range []string{env.ControlPlane.APIServer.CertDir, env.ControlPlane.Etcd.DataDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	if opts.RealNodes {
		ca, err := writeAPIServerPKI(env.ControlPlane.APIServer.CertDir)
		if err != nil {
			return nil, err
		}
		env.ControlPlane.APIServer.SecureServing.CA = ca
		// Pods get their service-account token (envtest turns the admission plugin off).
		env.ControlPlane.APIServer.Configure().Disable("disable-admission-plugins")
	}
	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("start envtest: %w (log: %s)", err, tailFile(apiLog.Name(), 2000))
	}
	cp := &ControlPlane{Name: name, Dir: dir, Config: cfg, env: env, tools: tools}
	registerStop(cp, cp.Stop)
	if cp.Client, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		_ = cp.Stop()
		return nil, err
	}
	kc, err := KubeconfigFromConfig(cfg, name)
	if err != nil {
		_ = cp.Stop()
		return nil, err
	}
	cp.AdminKubeconfig = filepath.Join(dir, "admin.kubeconfig")
	if err := os.WriteFile(cp.AdminKubeconfig, kc, 0o600); err != nil {
		_ = cp.Stop()
		return nil, err
	}
	return cp, nil
}

// Stop stops the simulated-node processes and the control plane. Safe to call twice.
func (cp *ControlPlane) Stop() error {
	unregisterStop(cp)
	cp.mu.Lock()
	sim := cp.sim
	cp.sim = nil
	cp.mu.Unlock()
	if sim != nil {
		sim.stop()
	}
	return stopErr(cp.env.Stop())
}

// stopErr drops envtest's "timeout waiting for process X to stop": envtest SIGKILLs the process
// right after saying so, and the process is gone either way.
func stopErr(err error) error {
	if err != nil && strings.Contains(err.Error(), "timeout waiting for process") {
		return nil
	}
	return err
}

// Host is the https URL of the API server.
func (cp *ControlPlane) Host() string { return cp.Config.Host }

// StopAPIServer stops only kube-apiserver; etcd keeps the data. Clients see connection errors.
func (cp *ControlPlane) StopAPIServer() error {
	return stopErr(cp.env.ControlPlane.APIServer.Stop())
}

// StartAPIServer restarts a stopped kube-apiserver on the same address with the same
// certificates, client CA and data, so kubeconfigs handed out before keep working.
func (cp *ControlPlane) StartAPIServer(ctx context.Context) error {
	if err := cp.env.ControlPlane.APIServer.Start(); err != nil {
		return err
	}
	return waitFor(ctx, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		return cp.Healthy(ctx) == nil, nil
	})
}

// Healthy asks the API server's /readyz.
func (cp *ControlPlane) Healthy(ctx context.Context) error {
	c := rest.CopyConfig(cp.Config)
	c.Timeout = 2 * time.Second
	cs, err := kubernetes.NewForConfig(c)
	if err != nil {
		return err
	}
	return cs.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
}

// Kubeconfig returns a kubeconfig for a new client-certificate user of this cluster. Each call
// makes fresh credentials, which is how tests rotate a cluster's kubeconfig.
func (cp *ControlPlane) Kubeconfig(user string, groups ...string) ([]byte, error) {
	au, err := cp.env.AddUser(envtest.User{Name: user, Groups: groups}, nil)
	if err != nil {
		return nil, err
	}
	return KubeconfigFromConfig(au.Config(), cp.Name)
}

// WriteKubeconfig writes a kubeconfig for a new cluster-admin user into dir/kubeconfig, for a
// component process, and returns its path.
func (cp *ControlPlane) WriteKubeconfig(dir, user string) (string, error) {
	kc, err := cp.Kubeconfig(user, "system:masters")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kubeconfig")
	return path, os.WriteFile(path, kc, 0o600)
}

// KubeconfigFor renders a kubeconfig for server with an inline CA and bearer token.
func KubeconfigFor(server string, caData []byte, token string) ([]byte, error) {
	return KubeconfigFromConfig(&rest.Config{Host: server, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: caData}}, "cluster")
}

// KubeconfigFromConfig renders cfg (client certificates or token) as a kubeconfig file.
func KubeconfigFromConfig(cfg *rest.Config, name string) ([]byte, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
		Token:                 cfg.BearerToken,
	}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	kc.CurrentContext = name
	return clientcmd.Write(*kc)
}

func (cp *ControlPlane) logTails(t testing.TB) {
	for _, f := range []string{"kube-apiserver.log", "etcd.log"} {
		t.Logf("--- %s/%s (tail) ---\n%s", cp.Name, f, tailFile(filepath.Join(cp.Dir, f), 3000))
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.sim != nil {
		for _, p := range cp.sim.procs {
			t.Logf("--- %s/%s (tail) ---\n%s", cp.Name, p.Name, p.Tail(3000))
		}
	}
}

// ClientFromKubeconfig builds a client from kubeconfig bytes.
func ClientFromKubeconfig(kubeconfig []byte, scheme *runtime.Scheme) (client.Client, error) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme})
}

// RestrictedKubeconfig returns a kubeconfig for a new user of this cluster bound to the first
// ClusterRole in the YAML file at rolePath (relative to the repository root), and nothing else:
// how a cluster is registered with Shardgate's documented user-cluster role instead of
// cluster-admin. The file's other ClusterRoles (the routers' roles, which that role may only
// bind) are created too, as the cluster admin does.
func (cp *ControlPlane) RestrictedKubeconfig(ctx context.Context, user, rolePath string) ([]byte, error) {
	roles, err := ReadClusterRoles(rolePath)
	if err != nil {
		return nil, err
	}
	for _, role := range roles {
		if err := cp.Client.Create(ctx, role); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: roles[0].Name + "-" + user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: roles[0].Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}}}
	if err := cp.Client.Create(ctx, binding); err != nil {
		return nil, err
	}
	return cp.Kubeconfig(user)
}

// ApplyClusterRoles creates the ClusterRoles of the file at rolePath (as ReadClusterRoles reads
// it), or updates them to it: what an operator does with a release's user-cluster RBAC.
func (cp *ControlPlane) ApplyClusterRoles(ctx context.Context, rolePath string) error {
	roles, err := ReadClusterRoles(rolePath)
	if err != nil {
		return err
	}
	for _, role := range roles {
		live := &rbacv1.ClusterRole{}
		switch err := cp.Client.Get(ctx, client.ObjectKey{Name: role.Name}, live); {
		case apierrors.IsNotFound(err):
			err = cp.Client.Create(ctx, role)
			if err != nil {
				return err
			}
		case err != nil:
			return err
		default:
			live.Rules, live.Labels = role.Rules, role.Labels
			if err := cp.Client.Update(ctx, live); err != nil {
				return err
			}
		}
	}
	return nil
}

// ReadClusterRoles reads the ClusterRoles of a multi-document YAML file at rolePath (relative to
// the repository root, or absolute), in order; a document of another kind or with unknown fields
// is an error.
func ReadClusterRoles(rolePath string) ([]*rbacv1.ClusterRole, error) {
	if !filepath.IsAbs(rolePath) {
		root, err := RepoRoot()
		if err != nil {
			return nil, err
		}
		rolePath = filepath.Join(root, rolePath)
	}
	b, err := os.ReadFile(rolePath)
	if err != nil {
		return nil, err
	}
	var roles []*rbacv1.ClusterRole
	for _, doc := range strings.Split("\n"+string(b), "\n---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		role := &rbacv1.ClusterRole{}
		if err := yaml.UnmarshalStrict([]byte(doc), role); err != nil {
			return nil, fmt.Errorf("%s: %w", rolePath, err)
		}
		if role.Kind != "ClusterRole" {
			return nil, fmt.Errorf("%s: a %s, not a ClusterRole", rolePath, role.Kind)
		}
		roles = append(roles, role)
	}
	if len(roles) == 0 {
		return nil, fmt.Errorf("%s: no ClusterRole", rolePath)
	}
	return roles, nil
}

// InstallCRDs installs the CRDs in dirs into a running control plane and waits until they are
// served (how an operator installs, say, Cluster API after Shardgate).
func (cp *ControlPlane) InstallCRDs(dirs ...string) error {
	_, err := envtest.InstallCRDs(cp.Config, envtest.CRDInstallOptions{Paths: dirs, ErrorIfPathMissing: true, Scheme: cp.Client.Scheme()})
	return err
}

// StartSharedControlPlane starts a control plane for a whole test binary, e.g. one seed API
// server shared by a package's reconciler tests; framework.Main stops it when the binary ends.
func StartSharedControlPlane(name string, opts ControlPlaneOptions) (*ControlPlane, error) {
	if !MainRuns() {
		return nil, fmt.Errorf("a shared control plane needs TestMain to call framework.Main, which stops it")
	}
	root, err := RunDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(root, "shared-"+name+"-")
	if err != nil {
		return nil, err
	}
	return startControlPlane(dir, name, opts)
}
