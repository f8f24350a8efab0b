package framework

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// GRPCCall makes a unary gRPC call of method ("/package.Service/Method", an empty request) from the
// client namespace to addr with authority host, over cleartext HTTP/2 (h2c, prior knowledge) or,
// with tlsConfig, over TLS with ALPN h2, as a gRPC client does. It returns the call's grpc-status
// and the answer's first field as a string (the backend's text); an error when the transport or
// the answer's framing failed.
func (f *Fabric) GRPCCall(ctx context.Context, addr, host, method string, tlsConfig *tls.Config) (string, string, error) {
	protocols := new(http.Protocols)
	scheme := "https"
	if tlsConfig == nil {
		scheme = "http"
		protocols.SetUnencryptedHTTP2(true)
	} else {
		protocols.SetHTTP2(true)
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true, Protocols: protocols, TLSClientConfig: tlsConfig,
		DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
			return DialInNetns(ctx, netnsPath(f.netns("client")), network, a)
		},
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, scheme+"://"+addr+method,
		bytes.NewReader([]byte{0, 0, 0, 0, 0})) // one uncompressed message of no bytes
	if err != nil {
		return "", "", err
	}
	req.Host = host
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("TE", "trailers")
	resp, err := client.Do(req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return "", "", err
	}
	if resp.ProtoMajor != 2 {
		return "", "", fmt.Errorf("answered over HTTP/%d.%d", resp.ProtoMajor, resp.ProtoMinor)
	}
	status := resp.Trailer.Get("Grpc-Status")
	if status == "" {
		status = resp.Header.Get("Grpc-Status") // a trailers-only answer (an error)
	}
	if resp.StatusCode != http.StatusOK {
		return status, "", fmt.Errorf("HTTP %d: %q", resp.StatusCode, body)
	}
	if len(body) == 0 {
		return status, "", nil
	}
	text, err := firstStringField(body)
	return status, text, err
}

// firstStringField reads one length-prefixed gRPC message and returns its field 1, a string.
func firstStringField(frame []byte) (string, error) {
	if len(frame) < 5 || frame[0] != 0 || int(binary.BigEndian.Uint32(frame[1:5])) != len(frame)-5 {
		return "", fmt.Errorf("not one uncompressed gRPC message: %q", frame)
	}
	msg := frame[5:]
	if len(msg) < 2 || msg[0] != 0x0a {
		return "", errors.New("the message's first field is not a string")
	}
	n, used := binary.Uvarint(msg[1:])
	if used <= 0 || uint64(len(msg)-1-used) < n {
		return "", errors.New("the message's string is cut short")
	}
	return string(msg[1+used : 1+used+int(n)]), nil
}
