// Reference server for volley: Go standard library net/http, production defaults; HTTPS
// (h2 and http/1.1 by ALPN) when TLS_CERT and TLS_KEY are set; HTTP/1.1 and cleartext HTTP/2
// with prior knowledge (h2c) on the same port when H2C=1; a WebSocket echo at /ws
// (gorilla/websocket), and over HTTP/2 by extended CONNECT (RFC 8441) when started with
// GODEBUG=http2xconnect=1.
package main

import (
	"bytes"
	"encoding/binary"
	"errors"
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

// errTooBig is a WebSocket message over wsReadLimit.
var errTooBig = errors.New("message too big")

// wsFrame is one client frame of a WebSocket over HTTP/2, unmasked.
type wsFrame struct {
	fin     bool
	opcode  byte
	payload []byte
}

// readWsFrame reads one client frame (RFC 6455 §5.2) from r; a payload over wsReadLimit is
// errTooBig, before any of it is read.
func readWsFrame(r io.Reader) (wsFrame, error) {
	var h [14]byte
	if _, err := io.ReadFull(r, h[:2]); err != nil {
		return wsFrame{}, err
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		if _, err := io.ReadFull(r, h[2:4]); err != nil {
			return wsFrame{}, err
		}
		n = uint64(binary.BigEndian.Uint16(h[2:4]))
	case 127:
		if _, err := io.ReadFull(r, h[2:10]); err != nil {
			return wsFrame{}, err
		}
		n = binary.BigEndian.Uint64(h[2:10])
	}
	if n > wsReadLimit {
		return wsFrame{}, errTooBig
	}
	var mask [4]byte
	if h[1]&0x80 != 0 {
		if _, err := io.ReadFull(r, mask[:]); err != nil {
			return wsFrame{}, err
		}
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		return wsFrame{}, err
	}
	for i := range p {
		p[i] ^= mask[i&3]
	}
	return wsFrame{fin: h[0]&0x80 != 0, opcode: h[0] & 0x0f, payload: p}, nil
}

// appendWsFrame appends a server frame (FIN set, unmasked) of opcode carrying p.
func appendWsFrame(out []byte, opcode byte, p []byte) []byte {
	out = append(out, 0x80|opcode)
	switch n := len(p); {
	case n <= 125:
		out = append(out, byte(n))
	case n <= 0xffff:
		out = append(out, 126)
		out = binary.BigEndian.AppendUint16(out, uint16(n))
	default:
		out = append(out, 127)
		out = binary.BigEndian.AppendUint64(out, uint64(n))
	}
	return append(out, p...)
}

// echoH2 is /ws over HTTP/2 (RFC 8441): an extended CONNECT with :protocol websocket is
// answered 200 and its stream is the WebSocket, echoed as echo does (gorilla/websocket
// upgrades HTTP/1.1 only, so the frames are read and written here).
func echoH2(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor != 2 || r.Header.Get(":protocol") != "websocket" {
		http.Error(w, "an extended CONNECT with :protocol websocket, please", http.StatusBadRequest)
		return
	}
	if r.Header.Get("Sec-Websocket-Version") != "13" {
		w.Header().Set("Sec-WebSocket-Version", "13")
		http.Error(w, "Sec-WebSocket-Version 13, please", http.StatusBadRequest)
		return
	}
	rc := http.NewResponseController(w)
	if err := rc.EnableFullDuplex(); err != nil {
		return
	}
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return
	}
	write := func(opcode byte, p []byte) error {
		if _, err := w.Write(appendWsFrame(nil, opcode, p)); err != nil {
			return err
		}
		return rc.Flush()
	}
	var msg []byte
	var msgOp byte
	for {
		f, err := readWsFrame(r.Body)
		if errors.Is(err, errTooBig) {
			_ = write(0x8, binary.BigEndian.AppendUint16(nil, 1009))
			return
		}
		if err != nil {
			return
		}
		switch f.opcode {
		case 0x1, 0x2, 0x0:
			if f.opcode != 0x0 {
				msgOp, msg = f.opcode, msg[:0]
			}
			msg = append(msg, f.payload...)
			if len(msg) > wsReadLimit {
				_ = write(0x8, binary.BigEndian.AppendUint16(nil, 1009))
				return
			}
			if !f.fin {
				continue
			}
			if write(msgOp, msg) != nil {
				return
			}
			echoed.Add(1)
		case 0x9:
			if write(0xA, f.payload) != nil {
				return
			}
		case 0x8:
			// A close of the same code (an empty one for an empty one), then the stream ends.
			p := f.payload
			if len(p) > 2 {
				p = p[:2]
			}
			_ = write(0x8, p)
			return
		}
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
	mux.HandleFunc("CONNECT /ws", echoH2)
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
