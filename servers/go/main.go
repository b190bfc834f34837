// Reference server for volley: Go standard library net/http, production defaults; HTTPS
// (h2 and http/1.1 by ALPN) when TLS_CERT and TLS_KEY are set; HTTP/1.1 and cleartext HTTP/2
// with prior knowledge (h2c) on the same port when H2C=1; a WebSocket echo at /ws
// (gorilla/websocket).
package main

import (
	"bytes"
	"io"
	"log"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

func text(w http.ResponseWriter, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "text/plain")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.Write(body)
}

var dot = []byte(".")

// maxBytes caps /bytes?n= (1 GiB): a larger body is refused rather than allocated.
const maxBytes = 1 << 30

func root(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		text(w, dot)
	case http.MethodPost:
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		text(w, []byte("length:"+strconv.FormatInt(n, 10)))
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// wsReadLimit caps one WebSocket message (16 MiB): a larger one closes the connection with
// 1009 (message too big).
const wsReadLimit = 16 << 20

// upgrader keeps gorilla's defaults: 4 KiB buffers, no compression, same-origin check.
var upgrader websocket.Upgrader

// echoed counts the WebSocket messages written back since start (GET /ws/count).
var echoed atomic.Int64

// echo answers each text or binary message with the same opcode and payload. gorilla's
// default handlers answer a ping with a pong and a close with a close of the same code.
func echo(w http.ResponseWriter, r *http.Request) {
	c, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade has answered with an HTTP error
	}
	defer c.Close()
	c.SetReadLimit(wsReadLimit)
	for {
		mt, msg, err := c.ReadMessage()
		if err != nil {
			return
		}
		if err := c.WriteMessage(mt, msg); err != nil {
			return
		}
		echoed.Add(1)
	}
}

func main() {
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	hello := []byte("Hello, World!")

	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", root)
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, r *http.Request) {
		text(w, hello)
	})
	mux.HandleFunc("GET /delay", func(w http.ResponseWriter, r *http.Request) {
		ms, err := strconv.Atoi(r.URL.Query().Get("ms"))
		if err != nil || ms < 0 {
			http.Error(w, "ms must be a non-negative integer", http.StatusBadRequest)
			return
		}
		// Each connection has its own goroutine: sleeping here blocks no other request.
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		text(w, dot)
	})
	mux.HandleFunc("GET /bytes", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.URL.Query().Get("n"))
		if err != nil || n < 0 || n > maxBytes {
			http.Error(w, "n must be an integer from 0 to 2^30", http.StatusBadRequest)
			return
		}
		text(w, bytes.Repeat([]byte("x"), n))
	})
	mux.HandleFunc("GET /ws", echo)
	mux.HandleFunc("GET /ws/count", func(w http.ResponseWriter, r *http.Request) {
		text(w, []byte(strconv.FormatInt(echoed.Load(), 10)))
	})

	srv := &http.Server{
		Addr:              "127.0.0.1:" + port,
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	// HTTPS when TLS_CERT and TLS_KEY name a PEM certificate chain and key: crypto/tls
	// defaults (TLS 1.2 and 1.3, session tickets), and net/http offers h2 and http/1.1 in ALPN
	// (its default protocols, HTTP1 and HTTP2, with the bundled HTTP/2 server's defaults).
	cert, key := os.Getenv("TLS_CERT"), os.Getenv("TLS_KEY")
	if cert != "" && key != "" {
		log.Fatal(srv.ListenAndServeTLS(cert, key))
	}
	// H2C=1: cleartext HTTP/2 with prior knowledge too. net/http tells the two apart by the
	// HTTP/2 connection preface, so HTTP/1.1 clients are still served on the same port.
	if os.Getenv("H2C") == "1" {
		srv.Protocols = new(http.Protocols)
		srv.Protocols.SetHTTP1(true)
		srv.Protocols.SetUnencryptedHTTP2(true)
	}
	log.Fatal(srv.ListenAndServe())
}
