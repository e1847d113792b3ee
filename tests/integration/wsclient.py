"""A minimal WebSocket (RFC 6455) client for the streaming tests, on the standard library:
the handshake, masked frames, and the channel protocols of k8s.io's wsstream (a channel byte
before each message's data, or '0' + the channel and base64 in text messages), enough to
play client-go's and the e2e suite's part and to misbehave on purpose."""
import base64
import hashlib
import os
import socket
import struct
import time
import urllib.parse

import spdyclient

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
CONT, TEXT, BINARY, CLOSE, PING, PONG = 0, 1, 2, 8, 9, 10
STDIN, STDOUT, STDERR, ERROR, RESIZE = range(5)


def accept_for(key):
    return base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()


class Client:
    """One connection to url, opened in the network namespace netns (a path), offering
    protocols in Sec-WebSocket-Protocol. status and headers are the answer's; after a 101,
    messages() reads channel messages until the server's close frame."""

    def __init__(self, url, netns, protocols=("v4.channel.k8s.io",), timeout=30, query="",
                 method="GET", key=None, version="13", sock=None):
        u = urllib.parse.urlsplit(url)
        self.sock = sock or spdyclient.connect_in(netns, u.hostname, u.port, timeout)
        self.sock.settimeout(timeout)
        self.key = key or base64.b64encode(os.urandom(16)).decode()
        head = ["%s %s%s HTTP/1.1" % (method, u.path, query), "Host: %s" % u.netloc,
                "Connection: Upgrade", "Upgrade: websocket",
                "Sec-WebSocket-Version: " + version, "Sec-WebSocket-Key: " + self.key]
        if protocols:
            head.append("Sec-WebSocket-Protocol: " + ", ".join(protocols))
        self.sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        self.status, self.headers, self.buf = spdyclient.read_head(self.sock)
        self.protocol = self.headers.get("sec-websocket-protocol", "")
        self.base64 = "base64" in self.protocol
        self.closed = None  # the server's close: (code, reason)
        self.pongs = []
        self.frames = []  # every data message, as (channel, data)

    def close(self):
        self.sock.close()

    def frame(self, op, payload=b"", fin=True, mask=True):
        n = len(payload)
        b0 = (0x80 if fin else 0) | op
        m = 0x80 if mask else 0
        if n < 126:
            head = struct.pack(">BB", b0, m | n)
        elif n < 65536:
            head = struct.pack(">BBH", b0, m | 126, n)
        else:
            head = struct.pack(">BBQ", b0, m | 127, n)
        if mask:
            key = os.urandom(4)
            payload = bytes(c ^ key[i % 4] for i, c in enumerate(payload))
            head += key
        self.sock.sendall(head + payload)

    def send(self, channel, data):
        """One message on channel, as the negotiated protocol frames it."""
        if self.base64:
            self.frame(TEXT, b"%d" % channel + base64.b64encode(data))
        else:
            self.frame(BINARY, bytes([channel]) + data)

    def close_channel(self, channel):
        """v5's close message: the end of the client's side of channel."""
        self.frame(BINARY, bytes([255, channel]))

    def resize(self, width, height):
        self.send(RESIZE, b'{"Width":%d,"Height":%d}\n' % (width, height))

    def _need(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("connection closed")
            self.buf += chunk

    def read_frame(self):
        """(fin, opcode, payload) of the server's next frame, which must not be masked."""
        self._need(2)
        b0, b1 = self.buf[0], self.buf[1]
        if b1 & 0x80:
            raise AssertionError("the server masked a frame")
        n, off = b1 & 0x7f, 2
        if n == 126:
            self._need(4)
            n, off = struct.unpack(">H", self.buf[2:4])[0], 4
        elif n == 127:
            self._need(10)
            n, off = struct.unpack(">Q", self.buf[2:10])[0], 10
        self._need(off + n)
        payload, self.buf = self.buf[off:off + n], self.buf[off + n:]
        return bool(b0 & 0x80), b0 & 0x0f, payload

    def read_message(self):
        """The next data message as (channel, data), answering nothing; None at the close."""
        while True:
            fin, op, payload = self.read_frame()
            if op == PONG:
                self.pongs.append(payload)
                continue
            if op == PING:
                self.frame(PONG, payload)
                continue
            if op == CLOSE:
                code = struct.unpack(">H", payload[:2])[0] if len(payload) >= 2 else None
                self.closed = (code, payload[2:].decode(errors="replace"))
                return None
            if not fin:
                raise AssertionError("the server fragmented a message")
            if op != (TEXT if self.base64 else BINARY):
                raise AssertionError("a message of type %d with %s" % (op, self.protocol))
            if self.base64:
                msg = (payload[0] - ord("0"), base64.b64decode(payload[1:]))
            else:
                msg = (payload[0], payload[1:])
            self.frames.append(msg)
            return msg

    def until_closed(self, timeout=60):
        """Reads every message until the server's close frame: {channel: bytes}."""
        self.sock.settimeout(timeout)
        out = {}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = self.read_message()
            if msg is None:
                return out
            out[msg[0]] = out.get(msg[0], b"") + msg[1]
        raise TimeoutError("no close within %ds" % timeout)

    def until(self, cond, timeout=30):
        """Reads messages until cond({channel: bytes}) holds: that dict."""
        self.sock.settimeout(timeout)
        out = {}
        deadline = time.monotonic() + timeout
        while not cond(out):
            if time.monotonic() > deadline:
                raise TimeoutError("no answer within %ds: %r" % (timeout, out))
            msg = self.read_message()
            if msg is None:
                raise EOFError("closed (%r) before: %r" % (self.closed, out))
            out[msg[0]] = out.get(msg[0], b"") + msg[1]
        return out

    def eof(self, timeout=10):
        """True when the server closes the connection within timeout."""
        self.sock.settimeout(timeout)
        try:
            while self.sock.recv(65536):
                pass
            return True
        except (socket.timeout, ConnectionResetError):
            return False
