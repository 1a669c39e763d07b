#!/usr/bin/env python3
"""`unmask pull`, list, show and rm against a local HTTPS server in the Hugging Face hub's URL
layout (the hub itself cannot be reached from the project's machines).

The server (Python's http.server over TLS with a self-signed certificate made by the openssl CLI)
serves the project's own tiny checkpoint, models/unmask-tinystories-block-hf, as the repo
unmask-test/tiny-block: /api/models/<repo>/revision/<rev>?blobs=true with sha, sizes, git blob
sha1s and LFS sha256s; /<repo>/resolve/<commit>/<path>, LFS files by a 302 to /cdn/<sha256>
(Range requests answered with 206). Checks:

  pull          the files land in the hub cache layout (blobs, snapshots symlinks, refs/main),
                byte-identical; stdout is the snapshot folder; a second pull downloads nothing
  generate      -m unmask-test/tiny-block and -m tiny:block (a catalogue name of $UNMASK_CATALOG)
                run the pulled model; the catalogue's decoding defaults are applied and reported
  dropped       the CDN drops the connection twice mid-file: the client resumes with Range
  killed        the client is killed mid-download (SIGKILL): a new pull resumes from the
                partial file instead of starting over
  bad_checksum  the CDN serves a corrupted byte: the pull fails with a checksum error and leaves
                no blob and no partial file
  bad_pin       a catalogue pin that the hub contradicts: refused before any download
  errors        a gated repo (403 GatedRepo), a missing repo (404), an untrusted certificate, a
                hostile file list ("../x"): each a clear one-line error, exit 1, nothing written
                outside the cache
  catalog_pin   scripts/catalog_pin.py pins a catalogue to the hub's commit and sha256s, and a
                pull through it passes
  list/show/rm  what they print, and rm frees the folder

  .venv/bin/python tests/hub/test_pull.py --unmask build/ci/bin/unmask
"""
import argparse
import hashlib
import http.server
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL_DIR = os.path.join(ROOT, "models", "unmask-tinystories-block-hf")
REPO = "unmask-test/tiny-block"
COMMIT = hashlib.sha1(b"unmask-test/tiny-block@1").hexdigest()
LFS = {"model.safetensors"}


def git_blob_sha1(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Repo:
    def __init__(self, files, commit=COMMIT, corrupt=None, extra_siblings=()):
        self.files = files  # path -> bytes
        self.commit = commit
        self.corrupt = corrupt  # a path whose served bytes have one byte flipped
        self.extra_siblings = list(extra_siblings)

    def info(self):
        sib = []
        for path, data in sorted(self.files.items()):
            s = {"rfilename": path, "size": len(data), "blobId": git_blob_sha1(data)}
            if path in LFS:
                s["lfs"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data),
                            "pointerSize": 134}
            sib.append(s)
        return {"id": "x", "sha": self.commit, "siblings": sib + self.extra_siblings}


class Hub:
    """The state of the fake hub and what it saw."""

    def __init__(self):
        files = {}
        for name in sorted(os.listdir(MODEL_DIR)):
            with open(os.path.join(MODEL_DIR, name), "rb") as f:
                files[name] = f.read()
        self.files = files
        self.repos = {REPO: Repo(files),
                      "unmask-test/bad-sum": Repo(files, corrupt="model.safetensors"),
                      "unmask-test/pinned": Repo(files),
                      "unmask-test/hostile": Repo({"config.json": files["config.json"]},
                                                  extra_siblings=[{"rfilename": "../escape.json",
                                                                   "size": 2,
                                                                   "blobId": "0" * 40}])}
        self.drop_after = {}  # sha256 -> [bytes to send before dropping, ...] (consumed)
        self.throttle = 0.0   # seconds per 64 KiB chunk on the CDN
        self.ranges = []      # Range headers the CDN saw
        self.lock = threading.Lock()


def make_handler(hub):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def error(self, status, code, message):
            body = json.dumps({"error": message}).encode()
            self.send_response(status)
            self.send_header("X-Error-Code", code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            url = urllib.parse.urlsplit(self.path)
            parts = [urllib.parse.unquote(p) for p in url.path.split("/")[1:]]
            if parts[:2] == ["api", "models"] and len(parts) >= 6 and parts[4] == "revision":
                repo = parts[2] + "/" + parts[3]
                if repo == "unmask-test/gated":
                    return self.error(403, "GatedRepo", "Access to model unmask-test/gated is restricted")
                if repo not in hub.repos:
                    return self.error(404, "RepoNotFound", "Repository not found")
                if parts[5] not in ("main", hub.repos[repo].commit):
                    return self.error(404, "RevisionNotFound", "Invalid rev id")
                body = json.dumps(hub.repos[repo].info()).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                return self.wfile.write(body)
            if len(parts) >= 5 and parts[2] == "resolve":
                repo = parts[0] + "/" + parts[1]
                path = "/".join(parts[4:])
                r = hub.repos.get(repo)
                if r is None or path not in r.files:
                    return self.error(404, "EntryNotFound", "Entry not found")
                data = r.files[path]
                if path in LFS:
                    sha = hashlib.sha256(data).hexdigest()
                    self.send_response(302)
                    self.send_header("Location", f"/cdn/{repo}/{sha}")
                    self.send_header("X-Linked-Etag", f'"{sha}"')
                    self.send_header("X-Repo-Commit", r.commit)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                return self.send_bytes(data, None)
            if parts[0] == "cdn" and len(parts) == 4:
                r = hub.repos.get(parts[1] + "/" + parts[2])
                for path, data in (r.files.items() if r else []):
                    if hashlib.sha256(data).hexdigest() == parts[3]:
                        if r.corrupt == path:
                            data = data[:1000] + bytes([data[1000] ^ 1]) + data[1001:]
                        return self.send_bytes(data, parts[3])
                return self.error(404, "EntryNotFound", "no such blob")
            self.error(404, "NotFound", "no route")

        def send_bytes(self, data, sha):
            start = 0
            rng = self.headers.get("Range")
            if rng:
                with hub.lock:
                    hub.ranges.append(rng)
                start = int(rng.split("=")[1].split("-")[0])
                if start >= len(data):
                    self.send_response(416)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            else:
                self.send_response(200)
            self.send_header("Content-Length", str(len(data) - start))
            self.send_header("Accept-Ranges", "bytes")
            self.end_headers()
            drop = None
            with hub.lock:
                if sha and hub.drop_after.get(sha):
                    drop = hub.drop_after[sha].pop(0)
            pos, sent = start, 0
            while pos < len(data):
                n = min(65536, len(data) - pos)
                if drop is not None and sent + n > drop:
                    self.wfile.write(data[pos:pos + drop - sent])
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                self.wfile.write(data[pos:pos + n])
                pos += n
                sent += n
                if hub.throttle:
                    time.sleep(hub.throttle)
    return Handler


def start_hub(tmp):
    cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", key, "-out", cert], check=True, capture_output=True)
    hub = Hub()
    class Server(http.server.ThreadingHTTPServer):
        def handle_error(self, request, client_address):
            pass  # clients killed or dropped on purpose

    srv = Server(("127.0.0.1", 0), make_handler(hub))
    srv.daemon_threads = True
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return hub, srv, cert, f"https://127.0.0.1:{srv.server_address[1]}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--unmask", required=True)
    args = ap.parse_args()
    exe = os.path.abspath(args.unmask)
    failures = []
    tmp = tempfile.mkdtemp(prefix="unmask-hub-")
    try:
        hub, srv, cert, endpoint = start_hub(tmp)
        cache = os.path.join(tmp, "cache")
        sha = hashlib.sha256(hub.files["model.safetensors"]).hexdigest()
        catalog = {"catalog_version": 1, "models": [
            {"name": "tiny:block", "repo": REPO, "revision": "main",
             "description": "the project's block-diffusion twin",
             "files": [{"path": "model.safetensors", "size": len(hub.files["model.safetensors"]),
                        "sha256": sha},
                       {"path": "config.json",
                        "sha256": hashlib.sha256(hub.files["config.json"]).hexdigest()}],
             "defaults": {"block-length": 4, "threshold": 0.8}},
            {"name": "tiny:badpin", "repo": "unmask-test/pinned", "revision": "main",
             "files": [{"path": "model.safetensors", "sha256": "ab" * 32}]}]}
        cat_path = os.path.join(tmp, "catalog.json")
        with open(cat_path, "w") as f:
            json.dump(catalog, f)
        env = dict(os.environ, HF_ENDPOINT=endpoint, HF_HUB_CACHE=cache, SSL_CERT_FILE=cert,
                   UNMASK_CATALOG=cat_path, HF_TOKEN="")
        for k in ("HF_HOME", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE"):
            env.pop(k, None)

        def run(*a, check_rc=None, timeout=120, extra_env=None):
            p = subprocess.run([exe, *a], env=dict(env, **(extra_env or {})), capture_output=True,
                               text=True, timeout=timeout)
            return p

        def check(name, ok, detail):
            print(("ok    " if ok else "FAIL  ") + name + ": " + detail)
            if not ok:
                failures.append(name)

        repo_dir = os.path.join(cache, "models--unmask-test--tiny-block")
        # pull
        p = run("pull", REPO)
        snap = p.stdout.strip()
        same = p.returncode == 0 and all(
            open(os.path.join(snap, n), "rb").read() == d for n, d in hub.files.items())
        layout = (os.path.islink(os.path.join(snap, "model.safetensors"))
                  and os.path.exists(os.path.join(repo_dir, "blobs", sha))
                  and open(os.path.join(repo_dir, "refs", "main")).read() == COMMIT
                  and snap == os.path.join(repo_dir, "snapshots", COMMIT))
        check("pull", same and layout, f"rc {p.returncode}, {len(hub.files)} files, layout {layout}"
              + ("" if same else " stderr: " + p.stderr[-800:]))
        p = run("pull", REPO)
        check("pull_again", p.returncode == 0 and "0 B downloaded" in p.stderr,
              p.stderr.strip().splitlines()[-2] if p.stderr else "no output")

        # generate from the pulled model, by hub id and by catalogue name (defaults applied)
        p = run("generate", "-m", REPO, "-p", "Once upon a time", "-n", "8", "-t", "1", "--json")
        ok = p.returncode == 0 and json.loads(p.stdout).get("text") is not None
        check("generate_by_id", ok, "rc %d %s" % (p.returncode, p.stderr[-300:] if not ok else ""))
        p = run("generate", "-m", "tiny:block", "-p", "Once upon a time", "-n", "8", "-t", "1",
                "--json", "--threshold", "0.9")
        ok = (p.returncode == 0 and "catalogue defaults --block-length 4" in p.stderr
              and "--threshold" not in p.stderr.split("catalogue defaults")[1].splitlines()[0])
        check("generate_by_name", ok, "defaults line: " + next(
            (l for l in p.stderr.splitlines() if "catalogue defaults" in l), p.stderr[-300:]))

        # list / show
        p = run("list", "--json")
        listed = json.loads(p.stdout) if p.returncode == 0 else []
        check("list", any(e["repo"] == REPO and e["name"] == "tiny:block" and e["complete"]
                          for e in listed), f"{len(listed)} entries")
        p = run("show", "tiny:block")
        check("show", p.returncode == 0 and "pinned" in p.stdout and snap in p.stdout
              and "--block-length 4 --threshold 0.8" in p.stdout, p.stdout.splitlines()[0] if p.stdout else p.stderr)

        # dropped: the CDN drops the connection twice mid-file; the client resumes with Range
        shutil.rmtree(cache, ignore_errors=True)
        hub.ranges.clear()
        hub.drop_after[sha] = [1 << 20, 1 << 20]
        p = run("pull", REPO)
        got = os.path.join(p.stdout.strip(), "model.safetensors") if p.returncode == 0 else ""
        ok = (p.returncode == 0 and open(got, "rb").read() == hub.files["model.safetensors"]
              and len(hub.ranges) >= 2 and "resum" in p.stderr)
        check("dropped", ok, f"ranges {hub.ranges}, rc {p.returncode}")

        # killed mid-download, then resumed by a new pull
        shutil.rmtree(cache, ignore_errors=True)
        hub.ranges.clear()
        hub.throttle = 0.02  # ~3 MB/s: the 5.9 MB file takes ~2 s
        proc = subprocess.Popen([exe, "pull", REPO], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        part = os.path.join(repo_dir, "blobs", sha + ".incomplete")
        deadline = time.time() + 30
        while time.time() < deadline and (not os.path.exists(part) or os.path.getsize(part) < 1 << 20):
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        kept = os.path.getsize(part) if os.path.exists(part) else 0
        hub.throttle = 0.0
        p = run("pull", REPO)
        start = int(hub.ranges[0].split("=")[1].split("-")[0]) if hub.ranges else 0
        ok = (p.returncode == 0 and kept > 0 and start >= 1 << 20 and not os.path.exists(part)
              and open(os.path.join(p.stdout.strip(), "model.safetensors"), "rb").read()
              == hub.files["model.safetensors"] and "resumed after" in p.stderr)
        check("killed", ok, f"{kept} bytes kept at the kill, resumed at byte {start}, rc {p.returncode}")

        # bad checksum: refused, nothing left behind
        p = run("pull", "unmask-test/bad-sum")
        bad_dir = os.path.join(cache, "models--unmask-test--bad-sum", "blobs")
        leftovers = [f for f in os.listdir(bad_dir) if f.startswith(sha)] if os.path.isdir(bad_dir) else []
        check("bad_checksum", p.returncode == 1 and "checksum mismatch" in p.stderr and not leftovers
              and len(p.stderr.strip().splitlines()[-1]) < 600,
              p.stderr.strip().splitlines()[-1][:200] if p.stderr else "no output")

        # bad pin: the catalogue pins a sha256 the hub contradicts
        p = run("pull", "tiny:badpin")
        check("bad_pin", p.returncode == 1 and "differs from the catalogue's pin" in p.stderr,
              p.stderr.strip().splitlines()[-1][:160] if p.stderr else "no output")

        # errors
        for name, a, want, extra in [
                ("gated", ["pull", "unmask-test/gated"], "HF_TOKEN", None),
                ("missing", ["pull", "unmask-test/none"], "no such repository", None),
                ("revision", ["pull", REPO, "--revision", "v9"], "no such revision", None),
                ("untrusted_cert", ["pull", REPO], "certificate", {"SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt"}),
                ("hostile_list", ["pull", "unmask-test/hostile"], "unsafe file path", None),
                ("not_pulled", ["generate", "-m", "unmask-test/other", "-p", "x"], "unmask pull unmask-test/other", None),
                ("bad_name", ["pull", "tiny:blok"], "did you mean tiny:block", None)]:
            p = run(*a, extra_env=extra)
            last = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
            check("error_" + name, p.returncode in (1, 2) and want in last and "Traceback" not in p.stderr,
                  last[:180])
        check("no_escape", not os.path.exists(os.path.join(cache, "escape.json"))
              and not os.path.exists(os.path.join(tmp, "escape.json")), "nothing outside the cache")

        # scripts/catalog_pin.py pins the catalogue to the hub's commit and checksums; a pull
        # through the pinned catalogue verifies against them
        pinned = os.path.join(tmp, "pinned.json")
        pin = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "catalog_pin.py"),
                              "--in", cat_path, "--out", pinned, "--only", "tiny:block"],
                             env=env, capture_output=True, text=True, timeout=60)
        entry = json.load(open(pinned))["models"][0] if pin.returncode == 0 else {}
        p = run("pull", "tiny:block", extra_env={"UNMASK_CATALOG": pinned})
        check("catalog_pin", pin.returncode == 0 and entry.get("revision") == COMMIT
              and any(f.get("sha256") == sha for f in entry.get("files", []))
              and p.returncode == 0 and p.stdout.strip().endswith(COMMIT),
              f"{len(entry.get('files', []))} files pinned at {entry.get('revision', '')[:12]}"
              + ("" if pin.returncode == 0 else pin.stderr[-300:]))

        # rm
        p = run("rm", "tiny:block")
        check("rm", p.returncode == 0 and not os.path.exists(repo_dir) and "freed" in p.stderr,
              p.stderr.strip())
        p = run("rm", "tiny:block")
        check("rm_again", p.returncode == 1 and "not in the cache" in p.stderr, p.stderr.strip())
        srv.shutdown()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print("\nFAILED: " + ", ".join(failures))
        return 1
    print("\nall hub checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
