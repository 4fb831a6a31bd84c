"""Edit-to-diagnostics through a real `pellc lsp` process, in a generated project.

    python bench/lsp_latency.py [--modules 400] [--edits 30]

A client of its own (JSON-RPC over the server's stdin and stdout, as an editor speaks it)
opens one module of the project (bench/engine_project.py: a tree of imports, retried fns
calling across modules), waits for its first diagnostics, then makes `--edits` edits, each a
didChange with a new version. The latency of an edit is the time from sending it to the
publishDiagnostics of that document with that version. Three kinds of edit alternate with the
text they undo: a comment (nothing an importer reads changes), a new local (the module's
body changes, its interface does not) and a new record field (its importers are checked again). The median and the worst are printed, with the time to
the first diagnostics (the server's start and the project's first check). Measured here,
never asserted in a timed test; the figures go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

sys.path.insert(0, str(Path(__file__).parent))
from engine_project import write_project


class Client:
    """A minimal LSP client: Content-Length framed JSON-RPC on a server's pipes."""

    def __init__(self, command: list[str], cwd: Path) -> None:
        self.process = subprocess.Popen(
            command, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.writer: IO[bytes] = self.process.stdin
        self.reader: IO[bytes] = self.process.stdout
        self.next_id = 0

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        self.writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.writer.flush()

    def request(self, method: str, params: dict[str, Any]) -> Any:
        self.next_id += 1
        number = self.next_id
        self.send({"id": number, "method": method, "params": params})
        while True:
            message = self.receive()
            if message.get("id") == number and "method" not in message:
                return message.get("result")

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.send({"method": method, "params": params})

    def receive(self) -> dict[str, Any]:
        length = 0
        while True:
            line = self.reader.readline()
            if not line:
                raise RuntimeError("the server closed its output")
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.decode("ascii").partition(":")
            if name.lower() == "content-length":
                length = int(value)
        message: dict[str, Any] = json.loads(self.reader.read(length))
        if "id" in message and "method" in message:  # a request of the server's: answer it
            self.send({"id": message["id"], "result": None})
        return message

    def diagnostics_for(self, uri: str, version: int | None) -> list[dict[str, Any]]:
        """Wait for the publishDiagnostics of `uri` (with `version`, when given)."""
        while True:
            message = self.receive()
            if message.get("method") != "textDocument/publishDiagnostics":
                continue
            params = message["params"]
            if params["uri"] == uri and (version is None or params.get("version") == version):
                found: list[dict[str, Any]] = params["diagnostics"]
                return found

    def close(self) -> None:
        self.request("shutdown", {})
        self.notify("exit", {})
        self.process.wait(timeout=30)


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--modules", type=int, default=400)
    options.add_argument("--edits", type=int, default=30)
    args = options.parse_args()
    pellc = str(Path(sys.executable).with_name("pellc"))
    with tempfile.TemporaryDirectory() as name:
        root = Path(name)
        write_project(root, args.modules)
        # app::m50 imports app::m25; app::m100 and app::m101 import it, and so on down
        edited = root / "app" / f"m{min(50, args.modules - 1)}.pell"
        uri = edited.resolve().as_uri()
        text = edited.read_text("utf-8")
        started = time.perf_counter()
        client = Client([pellc, "lsp"], root)
        client.request(
            "initialize",
            {"processId": os.getpid(), "rootUri": root.resolve().as_uri(), "capabilities": {}},
        )
        client.notify("initialized", {})
        client.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "pell", "version": 1, "text": text}},
        )
        first = client.diagnostics_for(uri, None)
        opened = time.perf_counter() - started
        edits = {
            "comment": text.replace("pub fn touch", "// an edit\npub fn touch", 1),
            "local": text.replace("    return acc;", "    let unused_local = 1;\n    return acc;", 1),
            # what its importers read changes: they are checked again, and published
            "record": text.replace("amount: number }", "amount: number, note: text }", 1),
        }
        timings: dict[str, list[float]] = {kind: [] for kind in edits}
        version = 1
        for number in range(args.edits):
            kind = list(edits)[number % len(edits)]
            for changed in (edits[kind], text):  # the edit, then its undo: both are timed
                version += 1
                sent = time.perf_counter()
                client.notify(
                    "textDocument/didChange",
                    {
                        "textDocument": {"uri": uri, "version": version},
                        "contentChanges": [{"text": changed}],
                    },
                )
                client.diagnostics_for(uri, version)
                timings[kind].append(time.perf_counter() - sent)
        client.close()
    print(f"{args.modules} modules; first diagnostics ({len(first)}) after {opened * 1000:.0f} ms")
    every = [t for kind in timings for t in timings[kind]]
    for kind, values in (*timings.items(), ("all", every)):
        print(
            f"{kind:8} edits: {len(values):3}  median {statistics.median(values) * 1000:7.1f} ms"
            f"  worst {max(values) * 1000:7.1f} ms"
        )


if __name__ == "__main__":
    main()
