"""pytest fixtures that run real `tessera serve` processes.

Every server gets a free loopback port and a fresh temporary dbpath (unless given one), is polled
until it answers an OP_MSG `ping` (TCP connect + ping, with a deadline; no fixed sleeps), writes its
stdout/stderr to files whose tails are attached to failing tests' reports, and is stopped with
SIGTERM, then SIGKILL after a deadline.

Environment: TESSERA_BIN (default <repo>/build/tessera), TESSERA_START_TIMEOUT (seconds, default
30), TESSERA_KEEP_DATA=1 keeps temporary dbpaths and logs.
"""

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid

import pytest
from pymongo import MongoClient

import tessera_wire as wire

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
TESSERA_BIN = os.environ.get("TESSERA_BIN") or os.path.join(REPO_ROOT, "build", "tessera")
START_TIMEOUT = float(os.environ.get("TESSERA_START_TIMEOUT", "30"))
STOP_TIMEOUT = 10.0

# Servers started and not yet cleaned up; their logs go into failure reports.
_LIVE_SERVERS = []


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tail(path, lines):
    try:
        with open(path, "r", errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return "<no log>\n"


class TesseraProcess:
    """One `tessera serve --port P --dbpath DIR` child process."""

    def __init__(self, dbpath=None, port=None, extra_args=()):
        if not os.path.exists(TESSERA_BIN):
            raise RuntimeError(
                f"tessera binary not found at {TESSERA_BIN} (set TESSERA_BIN or build it)"
            )
        self.owns_dbpath = dbpath is None
        self.dbpath = dbpath or tempfile.mkdtemp(prefix="tessera-py-db-")
        self.log_dir = tempfile.mkdtemp(prefix="tessera-py-log-")
        self.stdout_path = os.path.join(self.log_dir, "stdout.log")
        self.stderr_path = os.path.join(self.log_dir, "stderr.log")
        self.fixed_port = port is not None
        self.port = port or free_port()
        self.extra_args = list(extra_args)
        self.proc = None
        self.stopping = False
        self._clients = []

    # -- lifecycle ----------------------------------------------------------------------------
    def spawn(self):
        """Starts the process without waiting for readiness."""
        args = [TESSERA_BIN, "serve", "--port", str(self.port), "--dbpath", self.dbpath]
        args += self.extra_args
        with open(self.stdout_path, "ab") as out, open(self.stderr_path, "ab") as err:
            self.proc = subprocess.Popen(
                args, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True
            )
        self.stopping = False
        if self not in _LIVE_SERVERS:
            _LIVE_SERVERS.append(self)
        return self

    def wait_ready(self, timeout=START_TIMEOUT):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"tessera exited during startup with {self.proc.returncode}\n{self.log_tail()}"
                )
            try:
                reply = wire.ping(self.port, timeout=1.0)
                if reply.get("ok") == 1:
                    return self
                last = f"ping replied {reply!r}"
            except Exception as e:  # refused, closed, garbage, timeout: keep polling
                last = repr(e)
            time.sleep(0.05)
        raise RuntimeError(
            f"tessera not ready on port {self.port} after {timeout}s: {last}\n{self.log_tail()}"
        )

    def start(self):
        """Spawns and waits until ping works; retries on a port race."""
        for attempt in range(3):
            self.spawn()
            try:
                return self.wait_ready()
            except RuntimeError:
                self.stop(timeout=2)
                port_race = not self.fixed_port and re.search(
                    r"(?i)address already in use|EADDRINUSE", self.log_tail()
                )
                if not port_race or attempt == 2:
                    raise
                self.port = free_port()

    def restart(self):
        """Starts again on the same dbpath and port (after stop or kill9)."""
        assert not self.alive, "restart of a running server"
        self.fixed_port = True
        return self.start()

    @property
    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    @property
    def returncode(self):
        return None if self.proc is None else self.proc.poll()

    def stop(self, timeout=STOP_TIMEOUT):
        """SIGTERM, then SIGKILL after `timeout`. Returns the exit code (negative = signal)."""
        self.stopping = True
        self._close_clients()
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def kill9(self):
        """kill -9: a crash, with no chance to flush or clean up."""
        self.stopping = True
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self._close_clients()
        return self.proc.returncode

    def cleanup(self):
        if self.alive:
            self.stop()
        if self in _LIVE_SERVERS:
            _LIVE_SERVERS.remove(self)
        if os.environ.get("TESSERA_KEEP_DATA"):
            return
        if self.owns_dbpath:
            shutil.rmtree(self.dbpath, ignore_errors=True)
        shutil.rmtree(self.log_dir, ignore_errors=True)

    # -- clients and logs ---------------------------------------------------------------------
    @property
    def uri(self):
        return f"mongodb://127.0.0.1:{self.port}/?directConnection=true"

    def client(self, **kwargs):
        """A pymongo MongoClient; closed when the server stops."""
        opts = dict(serverSelectionTimeoutMS=10000, connectTimeoutMS=5000, socketTimeoutMS=60000)
        opts.update(kwargs)
        c = MongoClient(self.uri, **opts)
        self._clients.append(c)
        return c

    def _close_clients(self):
        for c in self._clients:
            try:
                c.close()
            except Exception:
                pass
        self._clients.clear()

    def log_tail(self, lines=60):
        return (
            f"--- tessera stderr ({self.stderr_path}) ---\n{_tail(self.stderr_path, lines)}"
            f"--- tessera stdout ({self.stdout_path}) ---\n{_tail(self.stdout_path, lines)}"
        )

    def describe(self):
        state = "alive" if self.alive else f"EXITED with {self.returncode}"
        return f"tessera on port {self.port} (dbpath {self.dbpath}) is {state}"


# --- fixtures --------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def tessera_bin():
    if not os.path.exists(TESSERA_BIN):
        pytest.fail(f"tessera binary not found at {TESSERA_BIN}; build it (scripts/build.sh)")
    return TESSERA_BIN


@pytest.fixture(scope="module")
def server(tessera_bin):
    """One server shared by the tests of a module. Fails the teardown if it died meanwhile."""
    srv = TesseraProcess().start()
    yield srv
    died = not srv.alive and not srv.stopping
    code = srv.returncode
    log = srv.log_tail()
    srv.cleanup()
    if died:
        pytest.fail(f"tessera died during the tests (exit {code})\n{log}")


@pytest.fixture(scope="module")
def client(server):
    return server.client()


@pytest.fixture
def db(client, request):
    """A database of its own for each test, named after the test (not created until used)."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", request.node.name)[:40]
    return client[f"py_{name}_{uuid.uuid4().hex[:8]}"]


@pytest.fixture
def server_factory(tessera_bin):
    """Makes servers on demand (crash tests); all are stopped and removed afterwards."""
    made = []

    def make(dbpath=None, port=None, start=True, extra_args=()):
        srv = TesseraProcess(dbpath=dbpath, port=port, extra_args=extra_args)
        made.append(srv)
        return srv.start() if start else srv

    yield make
    for srv in made:
        srv.cleanup()


@pytest.fixture
def tmp_dbpath():
    path = tempfile.mkdtemp(prefix="tessera-py-db-")
    yield path
    if not os.environ.get("TESSERA_KEEP_DATA"):
        shutil.rmtree(path, ignore_errors=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Attach the logs of every running (or just-died) server to a failing test's report."""
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for srv in list(_LIVE_SERVERS):
            report.sections.append((f"tessera log: {srv.describe()}", srv.log_tail(40)))
