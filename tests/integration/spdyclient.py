"""A minimal SPDY/3.1 client for the streaming tests: the HTTP upgrade, then frames by hand
(header blocks through zlib with SPDY/3's dictionary), enough to play client-go's part and
to misbehave on purpose."""
import base64
import ctypes
import os
import socket
import threading
import struct
import time
import urllib.parse
import zlib

SPDY3_DICT = base64.b64decode(
    "AAAAB29wdGlvbnMAAAAEaGVhZAAAAARwb3N0AAAAA3B1dAAAAAZkZWxldGUAAAAFdHJhY2UAAAAGYWNjZXB0AAAA"
    "DmFjY2VwdC1jaGFyc2V0AAAAD2FjY2VwdC1lbmNvZGluZwAAAA9hY2NlcHQtbGFuZ3VhZ2UAAAANYWNjZXB0LXJh"
    "bmdlcwAAAANhZ2UAAAAFYWxsb3cAAAANYXV0aG9yaXphdGlvbgAAAA1jYWNoZS1jb250cm9sAAAACmNvbm5lY3Rp"
    "b24AAAAMY29udGVudC1iYXNlAAAAEGNvbnRlbnQtZW5jb2RpbmcAAAAQY29udGVudC1sYW5ndWFnZQAAAA5jb250"
    "ZW50LWxlbmd0aAAAABBjb250ZW50LWxvY2F0aW9uAAAAC2NvbnRlbnQtbWQ1AAAADWNvbnRlbnQtcmFuZ2UAAAAM"
    "Y29udGVudC10eXBlAAAABGRhdGUAAAAEZXRhZwAAAAZleHBlY3QAAAAHZXhwaXJlcwAAAARmcm9tAAAABGhvc3QA"
    "AAAIaWYtbWF0Y2gAAAARaWYtbW9kaWZpZWQtc2luY2UAAAANaWYtbm9uZS1tYXRjaAAAAAhpZi1yYW5nZQAAABNp"
    "Zi11bm1vZGlmaWVkLXNpbmNlAAAADWxhc3QtbW9kaWZpZWQAAAAIbG9jYXRpb24AAAAMbWF4LWZvcndhcmRzAAAA"
    "BnByYWdtYQAAABJwcm94eS1hdXRoZW50aWNhdGUAAAATcHJveHktYXV0aG9yaXphdGlvbgAAAAVyYW5nZQAAAAdy"
    "ZWZlcmVyAAAAC3JldHJ5LWFmdGVyAAAABnNlcnZlcgAAAAJ0ZQAAAAd0cmFpbGVyAAAAEXRyYW5zZmVyLWVuY29k"
    "aW5nAAAAB3VwZ3JhZGUAAAAKdXNlci1hZ2VudAAAAAR2YXJ5AAAAA3ZpYQAAAAd3YXJuaW5nAAAAEHd3dy1hdXRo"
    "ZW50aWNhdGUAAAAGbWV0aG9kAAAAA2dldAAAAAZzdGF0dXMAAAAGMjAwIE9LAAAAB3ZlcnNpb24AAAAISFRUUC8x"
    "LjEAAAADdXJsAAAABnB1YmxpYwAAAApzZXQtY29va2llAAAACmtlZXAtYWxpdmUAAAAGb3JpZ2luMTAwMTAxMjAx"
    "MjAyMjA1MjA2MzAwMzAyMzAzMzA0MzA1MzA2MzA3NDAyNDA1NDA2NDA3NDA4NDA5NDEwNDExNDEyNDEzNDE0NDE1"
    "NDE2NDE3NTAyNTA0NTA1MjAzIE5vbi1BdXRob3JpdGF0aXZlIEluZm9ybWF0aW9uMjA0IE5vIENvbnRlbnQzMDEg"
    "TW92ZWQgUGVybWFuZW50bHk0MDAgQmFkIFJlcXVlc3Q0MDEgVW5hdXRob3JpemVkNDAzIEZvcmJpZGRlbjQwNCBO"
    "b3QgRm91bmQ1MDAgSW50ZXJuYWwgU2VydmVyIEVycm9yNTAxIE5vdCBJbXBsZW1lbnRlZDUwMyBTZXJ2aWNlIFVu"
    "YXZhaWxhYmxlSmFuIEZlYiBNYXIgQXByIE1heSBKdW4gSnVsIEF1ZyBTZXB0IE9jdCBOb3YgRGVjIDAwOjAwOjAw"
    "IE1vbiwgVHVlLCBXZWQsIFRodSwgRnJpLCBTYXQsIFN1biwgR01UY2h1bmtlZCx0ZXh0L2h0bWwsaW1hZ2UvcG5n"
    "LGltYWdlL2pwZyxpbWFnZS9naWYsYXBwbGljYXRpb24veG1sLGFwcGxpY2F0aW9uL3hodG1sK3htbCx0ZXh0L3Bs"
    "YWluLHRleHQvamF2YXNjcmlwdCxwdWJsaWNwcml2YXRlbWF4LWFnZT1nemlwLGRlZmxhdGUsc2RjaGNoYXJzZXQ9"
    "dXRmLThjaGFyc2V0PWlzby04ODU5LTEsdXRmLSwqLGVucT0wLg==")

SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = (
    1, 2, 3, 4, 6, 7, 8, 9)
FIN = 1


def in_netns(netns, fn):
    """fn() run in the network namespace netns (a path), by a thread of its own: setns()
    moves only the calling thread, and a socket keeps the namespace it was made in."""
    out = {}

    def run():
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = os.open(netns, os.O_RDONLY)
            try:
                if libc.setns(fd, 0x40000000) != 0:  # CLONE_NEWNET
                    raise OSError(ctypes.get_errno(), "setns " + netns)
            finally:
                os.close(fd)
            out["value"] = fn()
        except OSError as e:
            out["error"] = e

    t = threading.Thread(target=run)
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


def connect_in(netns, host, port, timeout=30):
    """A TCP connection made from inside the network namespace netns (a path)."""
    return in_netns(netns, lambda: socket.create_connection((host, port), timeout=timeout))


def read_head(sock):
    """An HTTP answer's head: (status, {lower-case name: value}, the bytes after it)."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(4096)
        if not chunk:
            break
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode(errors="replace").split("\r\n")
    status = int(lines[0].split()[1]) if lines[0] else 0
    headers = {k.strip().lower(): v.strip()
               for k, v in (ln.split(":", 1) for ln in lines[1:] if ":" in ln)}
    return status, headers, rest


class Client:
    def __init__(self, url, netns, protocols=("v4.channel.k8s.io",), upgrade="SPDY/3.1",
                 timeout=30, method="POST", path=None):
        u = urllib.parse.urlsplit(url)
        self.sock = connect_in(netns, u.hostname, u.port, timeout)
        u = u._replace(path=path) if path is not None else u
        head = ["%s %s HTTP/1.1" % (method, u.path), "Host: %s" % u.netloc,
                "Content-Length: 0"]
        if upgrade:
            head += ["Connection: Upgrade", "Upgrade: " + upgrade]
        head += ["X-Stream-Protocol-Version: " + p for p in protocols]
        self.sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        self.status, self.headers, self.buf = read_head(self.sock)
        self.deflate = zlib.compressobj(zdict=SPDY3_DICT)
        self.inflate = zlib.decompressobj(zdict=SPDY3_DICT)
        self.next_id = 1
        self.data = {}     # stream id -> bytes received
        self.fin = set()   # streams the server finished
        self.replied = set()
        self.reset = {}    # stream id -> status
        self.pings = []
        self.goaway = None

    def close(self):
        self.sock.close()

    def control(self, ftype, flags, payload):
        self.sock.sendall(struct.pack(">HHI", 0x8000 | 3, ftype, (flags << 24) | len(payload))
                          + payload)

    def headers_block(self, headers):
        raw = struct.pack(">I", len(headers))
        for k, v in headers.items():
            raw += struct.pack(">I", len(k)) + k.encode() + struct.pack(">I", len(v)) + \
                v.encode()
        return self.deflate.compress(raw) + self.deflate.flush(zlib.Z_SYNC_FLUSH)

    def open(self, headers, fin=False, wait=True):
        sid = self.next_id
        self.next_id += 2
        payload = struct.pack(">IIH", sid, 0, 0) + self.headers_block(headers)
        self.control(SYN_STREAM, FIN if fin else 0, payload)
        if wait:
            self.until(lambda: sid in self.replied or sid in self.reset)
        return sid

    def send(self, sid, data, fin=False):
        self.sock.sendall(struct.pack(">II", sid, ((FIN if fin else 0) << 24) | len(data)) +
                          data)

    def ping(self, pid):
        self.control(PING, 0, struct.pack(">I", pid))

    def read_frame(self):
        while len(self.buf) < 8 or len(self.buf) < 8 + (
                struct.unpack(">I", self.buf[4:8])[0] & 0xffffff):
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("connection closed")
            self.buf += chunk
        length = struct.unpack(">I", self.buf[4:8])[0] & 0xffffff
        frame, self.buf = self.buf[:8 + length], self.buf[8 + length:]
        first, second = struct.unpack(">II", frame[:8])
        flags, payload = second >> 24, frame[8:]
        if not first & 0x80000000:
            sid = first
            self.data[sid] = self.data.get(sid, b"") + payload
            if flags & FIN:
                self.fin.add(sid)
            return
        ftype = first & 0xffff
        if ftype == SYN_REPLY:
            sid = struct.unpack(">I", payload[:4])[0] & 0x7fffffff
            self.inflate.decompress(payload[4:])
            self.replied.add(sid)
            if flags & FIN:
                self.fin.add(sid)
        elif ftype == RST_STREAM:
            sid, status = struct.unpack(">II", payload[:8])
            self.reset[sid & 0x7fffffff] = status
        elif ftype == PING:
            self.pings.append(struct.unpack(">I", payload[:4])[0])
        elif ftype == GOAWAY:
            self.goaway = struct.unpack(">II", payload[:8])

    def until(self, cond, timeout=30):
        deadline = time.monotonic() + timeout
        while not cond():
            if time.monotonic() > deadline:
                raise TimeoutError("no answer within %ds" % timeout)
            self.read_frame()

    def closed(self, timeout=30):
        """Reads until the server closes; True if it did."""
        self.sock.settimeout(timeout)
        try:
            while True:
                self.read_frame()
        except EOFError:
            return True
        except (socket.timeout, ConnectionResetError):
            return False


def exec_streams(c, stdin=False, stdout=True, stderr=True):
    """Opens the streams as client-go does: error, then stdin, stdout, stderr."""
    ids = {"error": c.open({"streamtype": "error"})}
    for name, want in (("stdin", stdin), ("stdout", stdout), ("stderr", stderr)):
        if want:
            ids[name] = c.open({"streamtype": name})
    return ids
