package render

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/shardgate/shardgate/pkg/certs/certstest"
	"github.com/shardgate/shardgate/test/framework"
)

// TestRoutersReloadEveryKubeletUpdate runs the real Traefik with the TLS arguments the routers
// get, on a directory that is updated the way kubelet updates a projected volume, and checks that
// every update is served, not only the first. (Traefik watching just its configuration file saw
// the first update and, after that, only kubelet's ownership pass before the switch: the second
// renewal reached the routers or not depending on which process ran first.)
func TestRoutersReloadEveryKubeletUpdate(t *testing.T) {
	tools, err := framework.LocateTools(framework.ToolTraefik)
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	mount := filepath.Join(dir, "tls")
	if err := os.Mkdir(mount, 0o755); err != nil {
		t.Fatal(err)
	}
	// The volume's content for a key pair: what TLSObjects renders, projected as tlsVolumeSource
	// does, with the mount path moved to the test's directory.
	volume := func(serial int64) map[string][]byte {
		data := certstest.TLSData(t, serial, []string{"app.c1.test"}, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
		objs, err := TLSObjects(&TLSInput{Cert: data[corev1.TLSCertKey], Key: data[corev1.TLSPrivateKeyKey]}, Traefik{})
		if err != nil {
			t.Fatal(err)
		}
		cm := as[corev1.ConfigMap](t, objs[1])
		return map[string][]byte{
			tlsConfigFile:           []byte(strings.ReplaceAll(cm.Data[tlsConfigFile], tlsMountPath, mount)),
			corev1.TLSCertKey:       data[corev1.TLSCertKey],
			corev1.TLSPrivateKeyKey: data[corev1.TLSPrivateKeyKey],
		}
	}
	w := &kubeletVolume{dir: mount}
	w.write(t, volume(1))

	p, err := framework.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	port := fmt.Sprint(p)
	args := []string{"--entryPoints.websecure.address=127.0.0.1:" + port, "--log.level=DEBUG"}
	for _, a := range traefikTLSArgs(&TLSInput{}) {
		args = append(args, strings.ReplaceAll(a, tlsMountPath, mount))
	}
	cmd := exec.Command(tools.Path(framework.ToolTraefik), args...)
	logFile, err := os.Create(filepath.Join(dir, "traefik.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(logFile.Name())
			t.Logf("traefik log:\n%s", b)
		}
	})

	served := func() string {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", "127.0.0.1:"+port,
			&tls.Config{ServerName: "app.c1.test", InsecureSkipVerify: true}) //nolint:gosec // the test reads the served certificate, it trusts nothing
		if err != nil {
			return err.Error()
		}
		defer func() { _ = conn.Close() }()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	waitServed := func(want int64) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		for {
			got := served()
			if got == fmt.Sprint(want) {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("serial %d not served after the update: serving %s", want, got)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitServed(1)
	for serial := int64(2); serial <= 4; serial++ {
		w.write(t, volume(serial))
		waitServed(serial)
	}
}

// kubeletVolume writes a directory the way kubelet's AtomicWriter updates a projected volume: the
// files go into a new hidden timestamped directory, a `..data` symlink is switched to it by a
// rename, the visible names are symlinks through `..data` (made once), and the previous
// directory is removed. (kubelet's ownership pass for fsGroup, before the switch, is left out.)
type kubeletVolume struct {
	dir string
	n   int
}

func (v *kubeletVolume) write(t *testing.T, files map[string][]byte) {
	t.Helper()
	v.n++
	ts := fmt.Sprintf("..%s.%d", time.Now().UTC().Format("2006_01_02_15_04_05"), v.n)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(filepath.Join(v.dir, ts), 0o755))
	for name, b := range files {
		must(os.WriteFile(filepath.Join(v.dir, ts, name), b, 0o440))
	}
	old, _ := os.Readlink(filepath.Join(v.dir, "..data"))
	must(os.Symlink(ts, filepath.Join(v.dir, "..data_tmp")))
	must(os.Rename(filepath.Join(v.dir, "..data_tmp"), filepath.Join(v.dir, "..data")))
	for name := range files {
		if _, err := os.Lstat(filepath.Join(v.dir, name)); os.IsNotExist(err) {
			must(os.Symlink(filepath.Join("..data", name), filepath.Join(v.dir, name)))
		}
	}
	if old != "" {
		must(os.RemoveAll(filepath.Join(v.dir, old)))
	}
}
