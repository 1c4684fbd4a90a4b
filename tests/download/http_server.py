#!/usr/bin/env python3
"""A small HTTP server on 127.0.0.1 for the download tests: serves --root with Range requests, and misbehaves
on purpose where told. It stops by itself after --lifetime seconds; requests are logged to --log.

  --cut NAME:FRACTION     the first full request for NAME declares the whole size but closes the connection
                          after FRACTION of the bytes
  --fail NAME:CODE:COUNT  the first COUNT requests for NAME answer CODE
  --slow NAME:BYTES       NAME is sent at about BYTES per second
  --no-range              answer every request with the whole file (200), as a server without ranges does
"""
import argparse
import http.server
import os
import re
import threading
import time


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--root", required=True)
    p.add_argument("--port-file", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--lifetime", type=float, default=300)
    p.add_argument("--cut", action="append", default=[])
    p.add_argument("--fail", action="append", default=[])
    p.add_argument("--slow", action="append", default=[])
    p.add_argument("--no-range", action="store_true")
    args = p.parse_args()
    cuts = {c.rsplit(":", 1)[0]: float(c.rsplit(":", 1)[1]) for c in args.cut}
    fails = {}
    for f in args.fail:
        name, code, count = f.rsplit(":", 2)
        fails[name] = [int(code), int(count)]
    slow = {s.rsplit(":", 1)[0]: int(s.rsplit(":", 1)[1]) for s in args.slow}
    lock = threading.Lock()
    log = open(args.log, "a", buffering=1)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def note(self, text):
            with lock:
                log.write(f"END {self.path} {text}\n")

        def do_GET(self):
            name = self.path.lstrip("/").split("?")[0]
            # Logged on arrival (a client can finish before the reply's own line below is written).
            with lock:
                log.write(f"REQ {self.path} range={self.headers.get('Range')}\n")
            with lock:
                failing = fails.get(name)
                if failing and failing[1] > 0:
                    failing[1] -= 1
                    code = failing[0]
                else:
                    code = None
            if code is not None:
                body = f"error {code}\n".encode()
                self.send_response(code)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                self.note(f"-> {code}")
                return
            path = os.path.join(args.root, name)
            if not name or "/" in name or not os.path.isfile(path):
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                self.note("-> 404")
                return
            size = os.path.getsize(path)
            start, end = 0, size - 1
            rng = self.headers.get("Range")
            status = 200
            if rng and not args.no_range:
                m = re.fullmatch(r"bytes=(\d+)-(\d*)", rng.strip())
                if m:
                    start = int(m.group(1))
                    if m.group(2):
                        end = min(end, int(m.group(2)))
                    if start >= size:
                        self.send_response(416)
                        self.send_header("Content-Range", f"bytes */{size}")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        self.note(f"range={rng} -> 416")
                        return
                    status = 206
            length = end - start + 1
            self.send_response(status)
            self.send_header("Content-Length", str(length))
            if status == 206:
                self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
            self.send_header("Accept-Ranges", "none" if args.no_range else "bytes")
            self.end_headers()
            limit = length
            with lock:
                if status == 200 and name in cuts:
                    limit = int(length * cuts.pop(name))
            rate = slow.get(name)
            sent = 0
            try:
                with open(path, "rb") as f:
                    f.seek(start)
                    while sent < limit:
                        chunk = f.read(min(65536 if not rate else max(1, rate // 20), limit - sent))
                        if not chunk:
                            break
                        self.wfile.write(chunk)
                        sent += len(chunk)
                        if rate:
                            self.wfile.flush()
                            time.sleep(len(chunk) / rate)
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.note(f"range={rng} -> {status} sent={sent}/{length}")
            if sent < length:
                self.close_connection = True
                try:
                    self.connection.shutdown(2)
                except OSError:
                    pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(args.port_file + ".tmp", args.port_file)
    threading.Timer(args.lifetime, server.shutdown).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
