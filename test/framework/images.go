package framework

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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
	dir, err := componentDir(run, "images")
	if err != nil {
		return nil, err
	}
	tools, err := LocateTools(ToolTraefik)
	if err != nil {
		return nil, err
	}
	var tars []string
	for _, img := range []struct{ name, pkg, bin, entry string }{
		{PauseImage, "./test/images/pause", "", "/pause"},
		{BackendImage, "./test/images/backend", "", "/backend"},
		{TraefikImage, "", tools.Path(ToolTraefik), "/usr/local/bin/traefik"},
	} {
		bin := img.bin
		if bin == "" {
			bin = filepath.Join(dir, filepath.Base(img.pkg))
			cmd := exec.Command("go", "build", "-trimpath", "-o", bin, img.pkg)
			cmd.Dir, cmd.Env = root, append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				return nil, fmt.Errorf("build %s: %w\n%s", img.pkg, err, out)
			}
		}
		tar := filepath.Join(dir, filepath.Base(img.entry)+".tar")
		if err := WriteOCIImage(img.name, bin, img.entry, tar); err != nil {
			return nil, fmt.Errorf("image %s: %w", img.name, err)
		}
		tars = append(tars, tar)
	}
	return tars, nil
}

type ociDescriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    map[string]string `json:"platform,omitempty"`
}

// WriteOCIImage writes an OCI image layout tar named name: one uncompressed layer with binary at
// entry (the image's entrypoint), /etc/passwd with root and nonroot (65532), and /tmp.
func WriteOCIImage(name, binary, entry, out string) error {
	layer, err := os.CreateTemp(filepath.Dir(out), "layer-")
	if err != nil {
		return err
	}
	defer os.Remove(layer.Name())
	defer layer.Close()
	h := sha256.New()
	if err := writeLayer(io.MultiWriter(layer, h), binary, entry); err != nil {
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

func writeLayer(w io.Writer, binary, entry string) error {
	epoch := time.Unix(0, 0)
	tw := tar.NewWriter(w)
	dirs := []string{"tmp/", "etc/"}
	for d := filepath.Dir(entry[1:]); d != "."; d = filepath.Dir(d) {
		dirs = append(dirs, d+"/")
	}
	for i := len(dirs) - 1; i >= 0; i-- { // parents before children
		mode := int64(0o755)
		if dirs[i] == "tmp/" {
			mode = 0o1777
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dirs[i], Mode: mode, ModTime: epoch}); err != nil {
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
	bin, err := os.Open(binary)
	if err != nil {
		return err
	}
	defer bin.Close()
	st, err := bin.Stat()
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: entry[1:], Mode: 0o755, Size: st.Size(), ModTime: epoch}); err != nil {
		return err
	}
	if _, err := io.Copy(tw, bin); err != nil {
		return err
	}
	return tw.Close()
}

func digest(b []byte) string { return fmt.Sprintf("sha256:%x", sha256.Sum256(b)) }

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
