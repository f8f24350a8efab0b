// Command backend is the harness' sample app: it answers every request on $PORT (default 8080)
// with "hello from $NAME (host <Host header>)", and /healthz with ok. It speaks HTTP/1.1 and
// cleartext HTTP/2 (h2c, as routers reach gRPC backends), and answers a gRPC call to any method
// with that text as a message's first field (grpc.md's wire format: no generated code needed).
package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strings"
	"time"
)

func main() {
	name := os.Getenv("NAME")
	if name == "" {
		name, _ = os.Hostname()
	}
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		text := fmt.Sprintf("hello from %s (host %s)", name, r.Host)
		if r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
			answerGRPC(w, r, text+" "+r.URL.Path)
			return
		}
		fmt.Fprintln(w, text)
	})
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{Addr: ":" + port, Handler: mux, ReadHeaderTimeout: 5 * time.Second, Protocols: protocols}
	log.Fatal(srv.ListenAndServe())
}

// answerGRPC answers a unary gRPC call: one length-prefixed message whose field 1 (a string) is
// text, then grpc-status 0 in the trailers.
func answerGRPC(w http.ResponseWriter, r *http.Request, text string) {
	_, _ = io.Copy(io.Discard, r.Body)
	msg := append([]byte{0x0a}, binary.AppendUvarint(nil, uint64(len(text)))...)
	msg = append(msg, text...)
	frame := binary.BigEndian.AppendUint32([]byte{0}, uint32(len(msg)))
	w.Header().Set("Content-Type", "application/grpc")
	w.Header().Set("Trailer", "Grpc-Status, Grpc-Message")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(frame, msg...))
	w.Header().Set("Grpc-Status", "0")
	w.Header().Set("Grpc-Message", "")
}
