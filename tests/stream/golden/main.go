// Golden SPDY/3.1 frames from moby/spdystream's framer, the one kubelet and crictl use, for
// tests/stream/test_spdy.c; and the check of what rktlet's encoder writes. Run through ./run.
//
//	golden generate DIR   writes DIR/kubelet-exec.bin and DIR/kubelet-portforward.bin
//	golden check FILE     reads FILE (test_spdy's encoder output) and compares its frames
package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"

	"github.com/moby/spdystream/spdy"
)

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func syn(id spdy.StreamId, flags spdy.ControlFlags, h http.Header) spdy.Frame {
	return &spdy.SynStreamFrame{StreamId: id, CFHeader: spdy.ControlFrameHeader{Flags: flags}, Headers: h}
}

// What kubelet's exec client (remotecommand, v4.channel.k8s.io) sends after the upgrade:
// one stream per channel, error first; header names go out lower case.
func execFrames() []spdy.Frame {
	return []spdy.Frame{
		syn(1, 0, hdr("streamType", "error")),
		syn(3, 0, hdr("streamType", "stdin")),
		syn(5, 0, hdr("streamType", "stdout")),
		syn(7, 0, hdr("streamType", "stderr")),
		syn(9, 0, hdr("streamType", "resize")),
		&spdy.DataFrame{StreamId: 3, Data: []byte("echo hello\n")},
		&spdy.DataFrame{StreamId: 9, Data: []byte(`{"Width":80,"Height":24}`)},
		&spdy.DataFrame{StreamId: 3, Flags: spdy.DataFlagFin},
		&spdy.WindowUpdateFrame{StreamId: 5, DeltaWindowSize: 32768},
		&spdy.WindowUpdateFrame{StreamId: 0, DeltaWindowSize: 1},
		&spdy.HeadersFrame{StreamId: 7, Headers: hdr("x-note", "a", "x-note", "b")},
		&spdy.PingFrame{Id: 1},
		&spdy.RstStreamFrame{StreamId: 9, Status: spdy.Cancel},
		&spdy.GoAwayFrame{LastGoodStreamId: 0, Status: spdy.GoAwayOK},
	}
}

// What kubelet's port-forward client (portforward.k8s.io) sends: an error and a data stream
// per port and request; the same headers again on the second pair (the zlib stream spans them).
func portForwardFrames() []spdy.Frame {
	return []spdy.Frame{
		&spdy.SettingsFrame{FlagIdValues: []spdy.SettingsFlagIdValue{
			{Flag: 0, Id: spdy.SettingsInitialWindowSize, Value: 65536},
			{Flag: spdy.FlagSettingsPersistValue, Id: spdy.SettingsMaxConcurrentStreams, Value: 100},
		}},
		syn(1, 0, hdr("streamType", "error", "port", "8080", "requestID", "0")),
		syn(3, 0, hdr("streamType", "data", "port", "8080", "requestID", "0")),
		&spdy.DataFrame{StreamId: 3, Data: []byte("GET / HTTP/1.0\r\n\r\n")},
		syn(5, 0, hdr("streamType", "error", "port", "8080", "requestID", "1")),
		syn(7, spdy.ControlFlagFin, hdr("streamType", "data", "port", "8080", "requestID", "1")),
		&spdy.DataFrame{StreamId: 3, Flags: spdy.DataFlagFin, Data: []byte("bye")},
		&spdy.PingFrame{Id: 3},
		&spdy.RstStreamFrame{StreamId: 1, Status: spdy.ProtocolError},
		&spdy.GoAwayFrame{LastGoodStreamId: 7, Status: spdy.GoAwayInternalError},
	}
}

// What test_spdy.c's encoder_for_go case encodes, as the server's side of a connection.
func serverFrames() []spdy.Frame {
	return []spdy.Frame{
		&spdy.SettingsFrame{FlagIdValues: []spdy.SettingsFlagIdValue{
			{Flag: 0, Id: spdy.SettingsInitialWindowSize, Value: 1048576},
		}},
		&spdy.SynReplyFrame{StreamId: 1, Headers: hdr()},
		&spdy.SynReplyFrame{StreamId: 3, Headers: hdr("streamtype", "data", "port", "8080", "requestid", "0")},
		&spdy.SynReplyFrame{StreamId: 5, CFHeader: spdy.ControlFrameHeader{Flags: spdy.ControlFlagFin},
			Headers: hdr("streamtype", "data", "port", "8080", "requestid", "0")},
		&spdy.DataFrame{StreamId: 3, Data: []byte("HTTP/1.0 200 OK\r\n\r\n")},
		&spdy.DataFrame{StreamId: 3, Flags: spdy.DataFlagFin},
		&spdy.HeadersFrame{StreamId: 3, Headers: hdr("x-values", "a", "x-values", "bc")},
		&spdy.WindowUpdateFrame{StreamId: 3, DeltaWindowSize: 0x7fffffff},
		&spdy.PingFrame{Id: 2},
		&spdy.RstStreamFrame{StreamId: 5, Status: spdy.FrameTooLarge},
		&spdy.SynStreamFrame{StreamId: 2, AssociatedToStreamId: 1, Priority: 7,
			CFHeader: spdy.ControlFrameHeader{Flags: spdy.ControlFlagUnidirectional},
			Headers:  hdr("streamtype", "error")},
		&spdy.GoAwayFrame{LastGoodStreamId: 9, Status: spdy.GoAwayProtocolError},
	}
}

func write(path string, frames []spdy.Frame) error {
	var buf bytes.Buffer
	f, err := spdy.NewFramer(&buf, nil)
	if err != nil {
		return err
	}
	for _, fr := range frames {
		if err := f.WriteFrame(fr); err != nil {
			return err
		}
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// Fields that the wire carries, without the framer's private header fields.
func fields(fr spdy.Frame) string {
	switch v := fr.(type) {
	case *spdy.SynStreamFrame:
		return fmt.Sprintf("SYN_STREAM id=%d assoc=%d pri=%d flags=%d %v", v.StreamId, v.AssociatedToStreamId, v.Priority, v.CFHeader.Flags, v.Headers)
	case *spdy.SynReplyFrame:
		return fmt.Sprintf("SYN_REPLY id=%d flags=%d %v", v.StreamId, v.CFHeader.Flags, v.Headers)
	case *spdy.HeadersFrame:
		return fmt.Sprintf("HEADERS id=%d flags=%d %v", v.StreamId, v.CFHeader.Flags, v.Headers)
	case *spdy.DataFrame:
		return fmt.Sprintf("DATA id=%d flags=%d %q", v.StreamId, v.Flags, v.Data)
	case *spdy.WindowUpdateFrame:
		return fmt.Sprintf("WINDOW_UPDATE id=%d delta=%d", v.StreamId, v.DeltaWindowSize)
	case *spdy.PingFrame:
		return fmt.Sprintf("PING id=%d", v.Id)
	case *spdy.RstStreamFrame:
		return fmt.Sprintf("RST_STREAM id=%d status=%d", v.StreamId, v.Status)
	case *spdy.GoAwayFrame:
		return fmt.Sprintf("GOAWAY last=%d status=%d", v.LastGoodStreamId, v.Status)
	case *spdy.SettingsFrame:
		return fmt.Sprintf("SETTINGS flags=%d %v", v.CFHeader.Flags, v.FlagIdValues)
	}
	return fmt.Sprintf("%T", fr)
}

func check(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	f, err := spdy.NewFramer(io.Discard, bytes.NewReader(data))
	if err != nil {
		return err
	}
	want := serverFrames()
	for i := 0; ; i++ {
		fr, err := f.ReadFrame()
		if err == io.EOF && i == len(want) {
			fmt.Printf("golden: %s: the %d frames spdystream read are the ones expected\n", path, i)
			return nil
		}
		if err != nil {
			return fmt.Errorf("frame %d: %v", i, err)
		}
		if i >= len(want) {
			return fmt.Errorf("frame %d: unexpected %s", i, fields(fr))
		}
		got, exp := fields(fr), fields(want[i])
		// Headers were canonicalised by http.Header on both sides, so strings compare.
		if !reflect.DeepEqual(got, exp) {
			return fmt.Errorf("frame %d: got %s, want %s", i, got, exp)
		}
		fmt.Println("  ", got)
	}
}

func main() {
	var err error
	switch {
	case len(os.Args) == 3 && os.Args[1] == "generate":
		err = write(filepath.Join(os.Args[2], "kubelet-exec.bin"), execFrames())
		if err == nil {
			err = write(filepath.Join(os.Args[2], "kubelet-portforward.bin"), portForwardFrames())
		}
	case len(os.Args) == 3 && os.Args[1] == "check":
		err = check(os.Args[2])
	default:
		err = fmt.Errorf("usage: golden generate DIR | check FILE")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "golden:", err)
		os.Exit(1)
	}
}
