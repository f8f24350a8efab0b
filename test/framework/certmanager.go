package framework

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	cmacme "github.com/cert-manager/cert-manager/pkg/apis/acme/v1"
	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CertManager is cert-manager's controllers (hack/tools/cert-manager) running against a control
// plane, with its CRDs installed there. DNS-01 self checks ask the harness' BIND only.
type CertManager struct {
	// Namespace of ClusterIssuer credentials (cert-manager's --cluster-resource-namespace).
	Namespace string
	proc      *Process
}

// StartCertManager installs cert-manager's CRDs into cp, starts its controllers, and stops them
// when t ends.
func StartCertManager(t testing.TB, cp *ControlPlane, dnsSrv *DNSServer) *CertManager {
	t.Helper()
	cm, err := startCertManager(TestDir(t), cp, dnsSrv)
	if err != nil {
		t.Fatalf("cert-manager: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- cert-manager (tail) ---\n%s", cm.proc.Tail(6000))
		}
		_ = cm.proc.Stop()
	})
	return cm
}

// InstallCertManagerCRDs installs cert-manager's CRDs (the pinned version's) into cp.
func InstallCertManagerCRDs(cp *ControlPlane) error {
	tools, err := LocateTools("crds/cert-manager")
	if err != nil {
		return err
	}
	if err := cp.InstallCRDs(tools.Path("crds/cert-manager")); err != nil {
		return fmt.Errorf("cert-manager CRDs: %w", err)
	}
	return nil
}

func startCertManager(testDir string, cp *ControlPlane, dnsSrv *DNSServer) (*CertManager, error) {
	tools, err := LocateTools(ToolCertManager)
	if err != nil {
		return nil, err
	}
	if err := InstallCertManagerCRDs(cp); err != nil {
		return nil, err
	}
	dir, err := componentDir(testDir, "cert-manager")
	if err != nil {
		return nil, err
	}
	kc, err := cp.WriteKubeconfig(dir, "cert-manager")
	if err != nil {
		return nil, err
	}
	cm := &CertManager{Namespace: "cert-manager"}
	if err := cp.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cm.Namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	cm.proc, err = StartProcess(dir, ProcessSpec{Name: "cert-manager", Path: tools.Path(ToolCertManager), Args: []string{
		"--kubeconfig=" + kc, "--cluster-resource-namespace=" + cm.Namespace,
		"--dns01-recursive-nameservers=" + dnsSrv.Addr, "--dns01-check-retry-period=1s",
	}, Env: []string{"HOME=" + dir}})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := waitFor(ctx, 100*time.Millisecond, func(context.Context) (bool, error) {
		if exited, err := cm.proc.Exited(); exited {
			return false, fmt.Errorf("cert-manager exited: %w", err)
		}
		return strings.Contains(cm.proc.Tail(100000), "cert-manager controllers started"), nil
	}); err != nil {
		_ = cm.proc.Stop()
		return nil, fmt.Errorf("cert-manager not started: %w\n%s", err, cm.proc.Tail(3000))
	}
	return cm, nil
}

// ACMEIssuer describes an issuer for Pebble with the rfc2136 DNS-01 solver against BIND.
type ACMEIssuer struct {
	Name string
	// Namespace of an Issuer (with its TSIG Secret), e.g. Shardgate's certificate namespace, as
	// the chart makes it; "": a ClusterIssuer (its Secret in cert-manager's namespace).
	Namespace string
	// TSIGSecret overrides the BIND key's secret (a wrong key makes every challenge fail).
	TSIGSecret string
	// SkipSelfCheck sets the solver's waitInsteadOfSelfCheck to 0: Pebble validates as soon as
	// the record is presented. cert-manager's self-check sleeps 60 s per challenge once the record
	// is seen, and the apex's and the wildcard's challenges share one name, so they run in turn;
	// BIND is the zone's only server and applies updates before answering, so nothing is skipped
	// that could fail here.
	SkipSelfCheck bool
}

// CreateACMEIssuer creates the Issuer or ClusterIssuer (and its TSIG Secret) and waits until it
// is Ready (its ACME account registered with Pebble).
func (cm *CertManager) CreateACMEIssuer(ctx context.Context, cp *ControlPlane, p *Pebble, dnsSrv *DNSServer, is ACMEIssuer) error {
	secret := is.TSIGSecret
	if secret == "" {
		secret = dnsSrv.ACMETSIGSecret
	}
	secretNamespace := cm.Namespace
	if is.Namespace != "" {
		secretNamespace = is.Namespace
	}
	tsig := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secretNamespace, Name: is.Name + "-tsig"}, StringData: map[string]string{"secret": secret}}
	if err := cp.Client.Create(ctx, tsig); err != nil {
		return err
	}
	solver := cmacme.ACMEChallengeSolver{DNS01: &cmacme.ACMEChallengeSolverDNS01{RFC2136: &cmacme.ACMEIssuerDNS01ProviderRFC2136{
		Nameserver: dnsSrv.Addr, TSIGKeyName: strings.TrimSuffix(dnsSrv.ACMETSIGName, "."), TSIGAlgorithm: "HMACSHA256",
		TSIGSecret: cmmeta.SecretKeySelector{LocalObjectReference: cmmeta.LocalObjectReference{Name: tsig.Name}, Key: "secret"},
	}}}
	if is.SkipSelfCheck {
		solver.WaitInsteadOfSelfCheck = &metav1.Duration{}
	}
	spec := cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{
		ACME: &cmacme.ACMEIssuer{
			Server: p.Directory, CABundle: p.CABundle, Email: "ops@" + dnsSrv.Zone,
			PrivateKey: cmmeta.SecretKeySelector{LocalObjectReference: cmmeta.LocalObjectReference{Name: is.Name + "-account"}},
			Solvers:    []cmacme.ACMEChallengeSolver{solver},
		}}}
	var obj client.Object = &cmapi.ClusterIssuer{ObjectMeta: metav1.ObjectMeta{Name: is.Name}, Spec: spec}
	status := func() cmapi.IssuerStatus { return obj.(*cmapi.ClusterIssuer).Status }
	if is.Namespace != "" {
		obj = &cmapi.Issuer{ObjectMeta: metav1.ObjectMeta{Namespace: is.Namespace, Name: is.Name}, Spec: spec}
		status = func() cmapi.IssuerStatus { return obj.(*cmapi.Issuer).Status }
	}
	if err := cp.Client.Create(ctx, obj); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return waitFor(wctx, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return false, err
		}
		for _, c := range status().Conditions {
			if c.Type == cmapi.IssuerConditionReady && c.Status == cmmeta.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}
