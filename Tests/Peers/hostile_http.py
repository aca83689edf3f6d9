#!/usr/bin/python3
"""A hostile or recording HTTP server on 127.0.0.1 for Revue's WHIP tests: what an endpoint that
no one should trust can do to the HTTP side of WHIP.

    hostile_http.py PORT MODE [URL]

MODE:
  trickle   answers any request `201 Created` announcing a 4000-byte SDP, then sends one byte of it
            every half second until the client goes; prints `trickle ended after N bytes` then.
  flood     answers any request `201 Created` with a body that starts as an SDP and never ends
            (no length: it ends when the connection does), as fast as the client takes it;
            prints `flood ended after N bytes` when the client goes.
  huge      as flood, with a body of 100 MB, announced in Content-Length.
  record    answers any request `404`, printing `METHOD PATH authorization=yes|no` (whether an
            Authorization header came).
  redirect  answers any request `307 Temporary Redirect` to URL, printing as `record` does.
  chunked   answers any request `201 Created` with an SDP in three chunks (Transfer-Encoding: chunked,
            a chunk extension and a trailer field), a Location and two Link fields.
  bigchunk  answers any request `201 Created`, chunked, a chunk of 5 bytes then one that announces
            2^63-1 bytes, and a few of them.

Prints `listening PORT` once it serves. One thread per connection; python3's standard library only.
"""
import socket
import sys
import threading
import time


def say(line):
    print(line, flush=True)


def read_request(connection):
    """Reads the request's head and body (by Content-Length); returns the method, path and headers."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path = lines[0].split(" ")[:2]
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = connection.recv(65536)
        if not chunk:
            break
        body += chunk
    return method, path, headers


def serve(connection, mode, url):
    try:
        request = read_request(connection)
        if request is None:
            return
        method, path, headers = request
        said = f"{method} {path} authorization={'yes' if 'authorization' in headers else 'no'}"
        if mode == "trickle":
            say(f"trickling to {method} {path}")
            connection.sendall(
                b"HTTP/1.1 201 Created\r\nContent-Type: application/sdp\r\nLocation: /resource/trickle\r\n"
                b"Content-Length: 4000\r\n\r\nv=0\r\n"
            )
            sent = 0
            try:
                while True:
                    time.sleep(0.5)
                    connection.sendall(b"a")
                    sent += 1
            finally:
                say(f"trickle ended after {sent} bytes")
        elif mode in ("flood", "huge"):
            # huge: 100 MB announced and sent; flood: no length, sent until the client goes.
            say(f"{mode} to {method} {path}")
            size = 100 * 1024 * 1024 if mode == "huge" else None
            length = f"Content-Length: {size}\r\n" if size else "Connection: close\r\n"
            connection.sendall(
                b"HTTP/1.1 201 Created\r\nContent-Type: application/sdp\r\nLocation: /resource/flood\r\n"
                + f"{length}\r\n".encode()
            )
            sent, chunk = 0, b"v=0\r\n" + b"a" * 65531
            try:
                while size is None or sent < size:
                    connection.sendall(chunk)
                    sent += len(chunk)
            finally:
                say(f"{mode} ended after {sent} bytes")
        elif mode == "record":
            say(said)
            connection.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        elif mode == "chunked":
            say(said)
            connection.sendall(
                b"HTTP/1.1 201 Created\r\nContent-Type: application/sdp\r\nLocation: /resource/chunked\r\n"
                b'Link: <stun:stun.example.org>; rel="ice-server"\r\n'
                b'Link: </resource/chunked/layer>; rel="urn:ietf:params:whep:ext:core:layer"\r\n'
                b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                b"5\r\nv=0\r\n\r\n"
                b"B;note=x\r\no=- 1 1 IN \r\n"
                b"f\r\nIP4 127.0.0.1\r\n\r\n"
                b"0\r\nX-Trailer: yes\r\n\r\n"
            )
        elif mode == "bigchunk":
            say(said)
            connection.sendall(
                b"HTTP/1.1 201 Created\r\nContent-Type: application/sdp\r\nLocation: /resource/bigchunk\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n5\r\nv=0\r\n\r\n7fffffffffffffff\r\naaaa"
            )
        elif mode == "redirect":
            say(said)
            connection.sendall(
                f"HTTP/1.1 307 Temporary Redirect\r\nLocation: {url}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".encode()
            )
    except OSError:
        pass
    finally:
        connection.close()


def main():
    port, mode = int(sys.argv[1]), sys.argv[2]
    url = sys.argv[3] if len(sys.argv) > 3 else None
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(16)
    say(f"listening {port}")
    while True:
        connection, _ = listener.accept()
        threading.Thread(target=serve, args=(connection, mode, url), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
