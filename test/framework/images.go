package framework

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Images the real nodes run, written by the harness as OCI layout tars and imported into every
// node's containerd (no registry anywhere): pods use them with imagePullPolicy Never.
const (
	PauseImage   = "localhost/shardgate/pause:1"
	BackendImage = "localhost/shardgate/backend:1"
	// TraefikImage has the layout and entrypoint of the official image's binary
	// (/usr/local/bin/traefik), built from the pinned tool.
	TraefikImage = "localhost/shardgate/traefik:v3.7.12"
	// HAProxyImage has the layout of upstream's image (haproxytech/kubernetes-ingress): the
	// controller at /haproxy-ingress-controller and Debian 13's HAProxy 3.0 at
	// /usr/local/sbin/haproxy, with the loader and libraries it links, built from the pinned tools.
	HAProxyImage = "localhost/shardgate/haproxy-ingress:v1.11.12"
	// KeepalivedImage is Debian's keepalived (the version install-deps.sh installs) with the
	// shared libraries it links, and shardgate-vip-agent: what a VIP shard's keepalived
	// container runs (render.VIPAgentImage's contents).
	KeepalivedImage = "localhost/shardgate/keepalived:2.2.7"
	// CloudctlImage runs the harness' ClusterRoutedIPClass Jobs (test/images/cloudctl: calls
	// the simulated cloud, SimCloud).
	CloudctlImage = "localhost/shardgate/cloudctl:1"
)

var (
	imagesOnce sync.Once
	imageTars  []string
	imagesErr  error
)

// ImageTars builds (once per test binary) the harness images and returns their tar paths.
func ImageTars() ([]string, error) {
	imagesOnce.Do(func() { imageTars, imagesErr = buildImages() })
	return imageTars, imagesErr
}

func buildImages() ([]string, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	run, err := RunDir()
	if err != nil {
		return nil, err
	}
	// One directory per test binary: go test runs packages' binaries at once, and one must never
	// rewrite a tar another is importing.
	dir, err := os.MkdirTemp(run, "images-")
	if err != nil {
		return nil, err
	}
	tools, err := LocateTools(ToolTraefik, ToolHAProxyIngress, ToolHAProxyRoot)
	if err != nil {
		return nil, err
	}
	goBinary := func(pkg string) (string, error) {
		bin := filepath.Join(dir, filepath.Base(pkg))
		cmd := exec.Command("go", "build", "-trimpath", "-o", bin, pkg)
		cmd.Dir, cmd.Env = root, append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("build %s: %w\n%s", pkg, err, out)
		}
		return bin, nil
	}
	pause, err := goBinary("./test/images/pause")
	if err != nil {
		return nil, err
	}
	backend, err := goBinary("./test/images/backend")
	if err != nil {
		return nil, err
	}
	keepalived, err := WithSharedLibraries(ImageFile{Src: "/usr/sbin/keepalived", Dst: "/usr/sbin/keepalived"})
	if err != nil {
		return nil, err
	}
	agent, err := goBinary("./cmd/shardgate-vip-agent")
	if err != nil {
		return nil, err
	}
	keepalived = append(keepalived, ImageFile{Src: agent, Dst: "/usr/local/bin/shardgate-vip-agent"})
	cloudctl, err := goBinary("./test/images/cloudctl")
	if err != nil {
		return nil, err
	}
	haproxy, err := filesUnder(tools.Path(ToolHAProxyRoot))
	if err != nil {
		return nil, err
	}
	haproxy = append(haproxy, ImageFile{Src: tools.Path(ToolHAProxyIngress), Dst: "/haproxy-ingress-controller"})
	var tars []string
	for _, img := range []struct {
		name, entry, tar string
		files            []ImageFile
	}{
		{PauseImage, "/pause", "pause.tar", []ImageFile{{Src: pause, Dst: "/pause"}}},
		{BackendImage, "/backend", "backend.tar", []ImageFile{{Src: backend, Dst: "/backend"}}},
		{TraefikImage, "/usr/local/bin/traefik", "traefik.tar", []ImageFile{{Src: tools.Path(ToolTraefik), Dst: "/usr/local/bin/traefik"}}},
		{HAProxyImage, "/haproxy-ingress-controller", "haproxy.tar", haproxy},
		{KeepalivedImage, "/usr/sbin/keepalived", "keepalived.tar", keepalived},
		{CloudctlImage, "/cloudctl", "cloudctl.tar", []ImageFile{{Src: cloudctl, Dst: "/cloudctl"}}},
	} {
		tar := filepath.Join(dir, img.tar)
		if err := WriteOCIImage(img.name, img.files, img.entry, tar); err != nil {
			return nil, fmt.Errorf("image %s: %w", img.name, err)
		}
		tars = append(tars, tar)
	}
	return tars, nil
}

// filesUnder are the files under root (a root file system's tree), each at its path below root.
func filesUnder(root string) ([]ImageFile, error) {
	var files []ImageFile
	err := filepath.WalkDir(root+"/", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, path)
		files = append(files, ImageFile{Src: path, Dst: "/" + rel})
		return err
	})
	if err == nil && len(files) == 0 {
		err = fmt.Errorf("no files under %s", root)
	}
	return files, err
}

// ImageFile is a host file copied into an image: Src on the host, Dst (absolute) in the image.
type ImageFile struct{ Src, Dst string }

// WithSharedLibraries returns bin and every shared library it loads (ldd's resolution on this
// host, the dynamic loader included), each at the path the loader looks for it: a dynamically
// linked Debian binary runs in an image that holds nothing else.
func WithSharedLibraries(bin ImageFile) ([]ImageFile, error) {
	out, err := exec.Command("ldd", bin.Src).Output()
	if err != nil {
		return nil, fmt.Errorf("ldd %s: %w", bin.Src, err)
	}
	files := []ImageFile{bin}
	for _, line := range strings.Split(string(out), "\n") {
		// "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" or "/lib64/ld-linux-x86-64.so.2 (0x...)"
		fields := strings.Fields(line)
		var path string
		switch {
		case len(fields) >= 3 && fields[1] == "=>":
			path = fields[2]
		case len(fields) >= 1 && strings.HasPrefix(fields[0], "/"):
			path = fields[0]
		}
		if !strings.HasPrefix(path, "/") {
			continue // the vDSO: the kernel's, not a file
		}
		files = append(files, ImageFile{Src: path, Dst: path})
	}
	if len(files) == 1 {
		return nil, fmt.Errorf("ldd %s: no libraries found in %q", bin.Src, out)
	}
	return files, nil
}

type ociDescriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    map[string]string `json:"platform,omitempty"`
}

// WriteOCIImage writes an OCI image layout tar named name: one uncompressed layer with files
// (executable), /etc/passwd with root and nonroot (65532), and /tmp; entry is the entrypoint.
func WriteOCIImage(name string, files []ImageFile, entry, out string) error {
	layer, err := os.CreateTemp(filepath.Dir(out), "layer-")
	if err != nil {
		return err
	}
	defer os.Remove(layer.Name())
	defer layer.Close()
	h := sha256.New()
	if err := writeLayer(io.MultiWriter(layer, h), files); err != nil {
		return err
	}
	layerDigest := fmt.Sprintf("sha256:%x", h.Sum(nil))
	layerSize, err := layer.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}
	epoch := time.Unix(0, 0).UTC()
	cfg, _ := json.Marshal(map[string]any{
		"architecture": "amd64", "os": "linux", "created": epoch.Format(time.RFC3339),
		"config": map[string]any{"Entrypoint": []string{entry}, "WorkingDir": "/"},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{layerDigest}},
	})
	man, _ := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": ociDescriptor{MediaType: "application/vnd.oci.image.config.v1+json", Digest: digest(cfg), Size: int64(len(cfg))},
		"layers": []ociDescriptor{{MediaType: "application/vnd.oci.image.layer.v1.tar", Digest: layerDigest, Size: layerSize}},
	})
	idx, _ := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
		"manifests": []ociDescriptor{{MediaType: "application/vnd.oci.image.manifest.v1+json", Digest: digest(man), Size: int64(len(man)),
			Annotations: map[string]string{"io.containerd.image.name": name, "org.opencontainers.image.ref.name": name},
			Platform:    map[string]string{"architecture": "amd64", "os": "linux"}}},
	})
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	add := func(n string, size int64, r io.Reader) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: n, Mode: 0o644, Size: size, ModTime: epoch}); err != nil {
			return err
		}
		_, err := io.Copy(tw, r)
		return err
	}
	for _, d := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: epoch}); err != nil {
			return err
		}
	}
	for _, b := range []struct {
		name string
		data []byte
	}{{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)}, {"index.json", idx}, {"blobs/sha256/" + digest(cfg)[7:], cfg}, {"blobs/sha256/" + digest(man)[7:], man}} {
		if err := add(b.name, int64(len(b.data)), bytesReader(b.data)); err != nil {
			return err
		}
	}
	if _, err := layer.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if err := add("blobs/sha256/"+layerDigest[7:], layerSize, layer); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}

func writeLayer(w io.Writer, files []ImageFile) error {
	epoch := time.Unix(0, 0)
	tw := tar.NewWriter(w)
	dirs := map[string]bool{"tmp/": true, "etc/": true}
	for _, f := range files {
		if !filepath.IsAbs(f.Dst) {
			return fmt.Errorf("image path %q is not absolute", f.Dst)
		}
		for d := filepath.Dir(f.Dst[1:]); d != "."; d = filepath.Dir(d) {
			dirs[d+"/"] = true
		}
	}
	// Parents before children: sorted paths put a directory before what it holds.
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		mode := int64(0o755)
		if d == "tmp/" {
			mode = 0o1777
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: mode, ModTime: epoch}); err != nil {
			return err
		}
	}
	passwd := []byte("root:x:0:0:root:/:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/:/sbin/nologin\n")
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "etc/passwd", Mode: 0o644, Size: int64(len(passwd)), ModTime: epoch}); err != nil {
		return err
	}
	if _, err := tw.Write(passwd); err != nil {
		return err
	}
	for _, f := range files {
		if err := addFile(tw, f, epoch); err != nil {
			return err
		}
	}
	return tw.Close()
}

// addFile copies f's content (symlinks followed) into the layer as an executable file.
func addFile(tw *tar.Writer, f ImageFile, mtime time.Time) error {
	src, err := os.Open(f.Src)
	if err != nil {
		return err
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.Dst[1:], Mode: 0o755, Size: st.Size(), ModTime: mtime}); err != nil {
		return err
	}
	_, err = io.Copy(tw, src)
	return err
}

func digest(b []byte) string { return fmt.Sprintf("sha256:%x", sha256.Sum256(b)) }

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
