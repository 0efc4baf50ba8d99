"""What the ``agcore_cassette`` fixture does: naming, record modes, xdist safety, drift at teardown.

Rules:

1. Names. The n-th call in a test uses ``<test>.jsonl``, then
   ``<test>-2.jsonl``...; ``<test>`` is the test's name with its
   parameters (``test_x[gpt]``), characters other than letters, digits,
   ``_.-[]`` replaced by ``_``; ``name=`` chooses another. The folder is
   ``cassettes/<module>`` beside the test file (as pytest-recording does),
   so two test files of one name in two folders never share one.
2. Modes: see :mod:`agcore_sync.testing.pytest_plugin`. A replayed
   cassette must have been recorded from the class of the object passed
   (a provider class, or a transport class).
3. xdist safety. A recording holds ``<cassette>.lock`` (made with
   ``O_EXCL``: one owner) from the call to the end of the test and writes
   into a file of its own (``.<cassette>.<worker>.tmp``), moved over the
   cassette in one ``os.replace`` at the end: two workers never write one
   cassette, and a reader never sees a half-written one. A lock whose
   process is gone (a killed run) is taken over; one whose process lives
   fails the second recorder, naming the first.
4. Drift. A replay's mismatches are checked at the end of the test: one
   the code under test swallowed (an error event, a tool error) still
   fails it; one the test already failed with is not reported again.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, List, Optional, Tuple

from agcore_sync.llm.provider import LlmProvider
from agcore_sync.testing.errors import CassetteError

__all__ = ["Cassettes"]

_UNSAFE = re.compile(r"[^\w.\[\]-]")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists, owned by someone else
        return True
    return True


class _Lock:
    """``<cassette>.lock``, held by one recorder (rule 3)."""

    def __init__(self, cassette: str, worker: str) -> None:
        self.path = cassette + ".lock"
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        owner = json.dumps({"worker": worker, "pid": os.getpid()})
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = self._holder()
                if holder is not None and _alive(int(holder.get("pid", 0) or 0)):
                    raise CassetteError(
                        f"cassette {cassette} is being recorded by worker {holder.get('worker')!r} (pid "
                        f"{holder.get('pid')}): two tests may not record one cassette; give one of them "
                        "agcore_cassette(..., name=...)", path=cassette) from None
                try:  # a killed run's lock: take it over
                    os.unlink(self.path)
                except FileNotFoundError:
                    pass
                continue
            except OSError as exc:
                raise CassetteError(f"cannot write cassette {cassette}: {exc.strerror or exc}",
                                    path=cassette) from None
            with os.fdopen(fd, "w") as file:
                file.write(owner)
            return
        raise CassetteError(f"cassette {cassette}: could not take its lock {self.path}", path=cassette)

    def _holder(self) -> Optional[dict]:
        try:
            with open(self.path, encoding="utf-8") as file:
                data = json.load(file)
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def release(self) -> None:
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


class Cassettes:
    """The ``agcore_cassette`` fixture's value: call it with a provider or an MCP transport.

    Args:
        mode: ``"none"``, ``"new"`` or ``"all"``.
        folder: where this test module's cassettes live.
        test_name: the test's name (with its parameters).
        worker: the xdist worker id (``"main"`` without xdist).

    Attributes:
        paths: the cassettes this test used, in order.
    """

    def __init__(self, *, mode: str, folder: str, test_name: str, worker: str) -> None:
        self.mode = mode
        self.folder = folder
        self.base = _UNSAFE.sub("_", test_name)
        self.worker = worker
        self.paths: List[str] = []
        self._recordings: List[Tuple[str, str, _Lock]] = []  # (temporary file, cassette, lock)
        self._replays: List[Any] = []

    def __repr__(self) -> str:
        return f"Cassettes(mode={self.mode!r}, folder={self.folder!r}, test={self.base!r})"

    def __call__(self, inner: Any, *, name: Optional[str] = None) -> Any:
        """Return a provider (or transport) replaying or recording this test's next cassette.

        Args:
            inner: the real provider (an :class:`~agcore_sync.LlmProvider`)
                or MCP transport; used only when recording.
            name: the cassette's file name without ``.jsonl`` (rule 1).

        Raises:
            TypeError: ``inner`` is neither a provider nor a transport.
            CassetteError: the cassette is missing in mode ``none``, was
                recorded from another class, is corrupt, or is being
                recorded by another worker.
        """
        kind = self._kind(inner)
        if name is not None and name.endswith(".jsonl"):
            name = name[:-len(".jsonl")]
        stem = _UNSAFE.sub("_", name) if name is not None else (
            self.base if not self.paths else f"{self.base}-{len(self.paths) + 1}")
        path = os.path.join(self.folder, stem + ".jsonl")
        self.paths.append(path)
        if self.mode == "all" or (self.mode == "new" and not os.path.exists(path)):
            return self._record(inner, kind, path)
        if not os.path.exists(path):
            raise CassetteError(f"no cassette at {path}: record it by running this test with --agcore-record=new "
                                "(the real provider or server answers once)", path=path)
        return self._replay(inner, kind, path)

    @staticmethod
    def _kind(inner: Any) -> str:
        if isinstance(inner, LlmProvider):
            return "llm"
        from agcore_sync.mcp import Transport  # MCP loads only for tests that record MCP

        if isinstance(inner, Transport):
            return "mcp"
        raise TypeError(f"agcore_cassette: pass an LlmProvider or an MCP Transport, got {type(inner).__name__}")

    def _record(self, inner: Any, kind: str, path: str) -> Any:
        lock = _Lock(path, self.worker)
        temporary = os.path.join(self.folder, f".{os.path.basename(path)}.{self.worker}.tmp")
        try:
            if os.path.exists(temporary):
                os.unlink(temporary)
            if kind == "llm":
                from agcore_sync.testing.provider import RecordingProvider

                recorder: Any = RecordingProvider(inner, temporary)
            else:
                from agcore_sync.testing.mcp import RecordingTransport

                recorder = RecordingTransport(inner, temporary)
        except BaseException:
            lock.release()
            raise
        self._recordings.append((temporary, path, lock))
        return recorder

    def _replay(self, inner: Any, kind: str, path: str) -> Any:
        if kind == "llm":
            from agcore_sync.testing.provider import ReplayProvider

            replay: Any = ReplayProvider(path)
            recorded = replay.recorded_provider
        else:
            from agcore_sync.testing.mcp import ReplayTransport

            replay = ReplayTransport(path)
            recorded = replay.recorded_transport
        if recorded != type(inner).__name__:
            raise CassetteError(f"cassette {path} was recorded with {recorded}, but the test passes "
                                f"{type(inner).__name__}: re-record it with --agcore-record=all", path=path)
        self._replays.append(replay)
        return replay

    def finish(self, failure: Optional[BaseException] = None) -> None:
        """Move the recordings into place, release their locks, and fail on a swallowed drift (rule 4).

        Args:
            failure: the exception the test failed with, if known (pytest
                keeps it in ``sys.last_value``): a mismatch in its chain
                already failed the test and is not reported twice.
        """
        try:
            for temporary, path, _lock in self._recordings:
                if os.path.exists(temporary):
                    os.replace(temporary, path)
        finally:
            for _temporary, _path, lock in self._recordings:
                lock.release()
        seen = set()
        while failure is not None and id(failure) not in seen:
            seen.add(id(failure))
            failure = failure.__cause__ or failure.__context__
        for replay in self._replays:
            swallowed = [error for error in replay.mismatches if id(error) not in seen]
            if swallowed:
                raise swallowed[0]
