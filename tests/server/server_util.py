"""Starts `unmask serve` on a free loopback port for the server tests and stops it afterwards.

Usage:
    with UnmaskServer(unmask_path, ["-m", LLADA, "-m", AR, "-t", "1"]) as srv:
        srv.url  # "http://127.0.0.1:PORT"
The server's stderr is kept in srv.log (a file path) for failure messages.
"""
import os
import re
import signal
import subprocess
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLADA = os.path.join(ROOT, "models", "unmask-tinystories-llada.gguf")
AR = os.path.join(ROOT, "models", "unmask-tinystories-ar.gguf")
LLADA_ID = "unmask-tinystories-llada"
AR_ID = "unmask-tinystories-ar"


class UnmaskServer:
    def __init__(self, unmask, args, ready_timeout_s=60.0):
        self.unmask = unmask
        self.args = list(args)
        self.ready_timeout_s = ready_timeout_s
        self.proc = None
        self.url = None
        self.log = None

    def __enter__(self):
        fd, self.log = tempfile.mkstemp(prefix="unmask-serve-", suffix=".log")
        self._log_file = os.fdopen(fd, "w+")
        cmd = [self.unmask, "serve", "--host", "127.0.0.1", "--port", "0"] + self.args
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self._log_file)
        deadline = time.time() + self.ready_timeout_s
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"unmask serve exited with {self.proc.returncode}:\n{self.stderr()}")
            m = re.search(r"listening on (http://127\.0\.0\.1:\d+)", self.stderr())
            if m and self.url is None:
                self.url = m.group(1)
            if self.url and self._healthy():
                return self
            time.sleep(0.05)
        self.__exit__(None, None, None)
        raise RuntimeError(f"unmask serve not ready after {self.ready_timeout_s} s:\n{self.stderr()}")

    def _healthy(self):
        try:
            with urllib.request.urlopen(self.url + "/health", timeout=2) as r:
                return r.status == 200
        except Exception:
            return False

    def stderr(self):
        with open(self.log) as f:
            return f.read()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def rss_kib(self):
        """Resident memory of the server process in KiB (Linux /proc)."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def __exit__(self, *exc):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # stop at once (SIGTERM would drain)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log_file.close()
        return False
