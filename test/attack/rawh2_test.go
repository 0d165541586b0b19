package attack

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/protobuf/proto"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// rawTranslate makes a Translate call with extra headers over a
// hand-driven HTTP/2 connection to address, as an attacker's client would:
// unlike grpc-go's client, it sends headers past the limit the server
// advertises (SETTINGS_MAX_HEADER_LIST_SIZE). It returns how the server
// answered: "grpc-status N" (N as a code, OK included), "RST_STREAM
// <code>", "GOAWAY <code>", or the connection error that ended it.
func rawTranslate(address string, headers map[string]string, req *tributaryv1.TranslateRequest) string {
	conn, err := net.DialTimeout("tcp", address, guard)
	if err != nil {
		return "dial: " + err.Error()
	}
	_ = conn.SetDeadline(time.Now().Add(guard))

	// Write everything from a goroutine: the server may stop reading (and
	// the writes block) while it answers, which readAnswer reads.
	written := make(chan error, 1)
	go func() { written <- writeCall(conn, address, headers, req) }()
	answer := readAnswer(conn)
	_ = conn.Close() // unblocks the writes
	// A failed write is expected when the server refuses the call
	// mid-way; it only adds to an answer that says nothing more.
	if err := <-written; err != nil && strings.HasPrefix(answer, "connection ended") {
		answer += " (the write failed: " + err.Error() + ")"
	}
	return answer
}

// readAnswer reads frames from conn until one says how the call ended.
func readAnswer(conn net.Conn) string {
	fr := http2.NewFramer(nil, conn)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return "connection ended: " + err.Error()
		}
		switch f := f.(type) {
		case *http2.RSTStreamFrame:
			return "RST_STREAM " + f.ErrCode.String()
		case *http2.GoAwayFrame:
			return "GOAWAY " + f.ErrCode.String()
		case *http2.MetaHeadersFrame:
			if s := f.PseudoValue("status"); s != "" && s != "200" {
				return "HTTP status " + s
			}
			for _, h := range f.RegularFields() {
				if h.Name == "grpc-status" {
					code, _ := strconv.Atoi(h.Value)
					return fmt.Sprintf("grpc-status %d", code)
				}
			}
		}
	}
}

// writeCall writes the client preface, its SETTINGS, the call's HEADERS
// (and CONTINUATIONs) and its one DATA frame.
func writeCall(conn net.Conn, address string, headers map[string]string, req *tributaryv1.TranslateRequest) error {
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		return err
	}
	fr := http2.NewFramer(conn, nil)
	if err := fr.WriteSettings(); err != nil {
		return err
	}
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for _, f := range []hpack.HeaderField{
		{Name: ":method", Value: "POST"}, {Name: ":scheme", Value: "http"},
		{Name: ":path", Value: tributaryv1.TranslationService_Translate_FullMethodName},
		{Name: ":authority", Value: address}, {Name: "content-type", Value: "application/grpc"}, {Name: "te", Value: "trailers"},
	} {
		_ = enc.WriteField(f) // writes to a bytes.Buffer, which never fails
	}
	for name, value := range headers {
		_ = enc.WriteField(hpack.HeaderField{Name: name, Value: value})
	}
	const chunk = 16 << 10 // the smallest SETTINGS_MAX_FRAME_SIZE, which every server accepts
	b := block.Bytes()
	first := b[:min(chunk, len(b))]
	b = b[len(first):]
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: first, EndHeaders: len(b) == 0}); err != nil {
		return err
	}
	for len(b) > 0 {
		next := b[:min(chunk, len(b))]
		b = b[len(next):]
		if err := fr.WriteContinuation(1, len(b) == 0, next); err != nil {
			return err
		}
	}
	msg, err := proto.Marshal(req)
	if err != nil {
		return err
	}
	// gRPC's framing: not compressed, then the length.
	data := binary.BigEndian.AppendUint32([]byte{0}, uint32(len(msg)))
	if err := fr.WriteData(1, true, append(data, msg...)); err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}
