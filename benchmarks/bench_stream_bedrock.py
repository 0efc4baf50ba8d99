"""The Bedrock row of bench_stream.py: event-stream parsing, ours against botocore's ``EventStream``.

Run from the repository root::

    python benchmarks/bench_stream.py --api bedrock [--chunks 20000] [--repeats 7]

One recorded-shape ConverseStream body (``messageStart``, text
``contentBlockDelta`` events of a few characters with Bedrock's ``p``
padding, ``contentBlockStop``, ``messageStop``, ``metadata``) is built once
as real event-stream frames and cut into 64 KiB reads, as they come off a
socket. No network: this measures the parsing alone. Three readers,
interleaved, each ``--repeats`` times after one warm-up:

- ours, decoder + JSON: :class:`agcore_sync._http.eventstream.EventStreamDecoder`
  (both CRCs checked) and ``json.loads`` of each payload: the same work as
  botocore's reader, a dict per event;
- ours, to stream events: the decoder and the provider's translator, the
  whole path ``BedrockProvider.chat_stream`` runs per byte;
- botocore: ``botocore.eventstream.EventStream`` over the same reads with the
  ``bedrock-runtime`` service model (what boto3's ``converse_stream`` yields).

The ratio is events per second of ours (decoder + JSON) over botocore's, by
the reader thread's CPU time.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agcore_sync._http.eventstream import EventStreamDecoder  # noqa: E402
from agcore_sync._http.masking import Masker  # noqa: E402
from tests.support import bedrock_wire as bw  # noqa: E402

#: The goal the brief sets for ours / botocore, in events per second.
TARGET_RATIO = 1.5

READ = 65536
_WORDS = ["The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog", ".", " É", "té", " 🙂", "\n"]


def build(n_events: int) -> List[bytes]:
    frames = [bw.message_start()]
    frames += [bw.text_delta(0, _WORDS[i % len(_WORDS)]) for i in range(max(1, n_events - 4))]
    frames += [bw.block_stop(0), bw.message_stop("end_turn"), bw.metadata(120, n_events)]
    data = b"".join(frames)
    return [data[i:i + READ] for i in range(0, len(data), READ)]


def read_ours_json(reads: List[bytes]) -> int:
    decoder = EventStreamDecoder()
    count = 0
    for chunk in reads:
        for message in decoder.feed(chunk):
            json.loads(message.payload)
            count += 1
    decoder.close()
    return count


def read_ours_events(reads: List[bytes]) -> int:
    from agcore_sync.llm._bedrock_stream import BedrockStreamTranslator

    decoder = EventStreamDecoder()
    translator = BedrockStreamTranslator("us.anthropic.claude-sonnet-4-5-20250929-v1:0", pricing=None,
                                         masker=Masker(None))
    count = 0
    for chunk in reads:
        for message in decoder.feed(chunk):
            translator.feed(message)
            count += 1
    decoder.close()
    assert translator.done
    return count


class _Raw:
    def __init__(self, reads: List[bytes]) -> None:
        self._reads = reads

    def stream(self) -> Any:
        return iter(self._reads)

    def close(self) -> None:
        pass


def _botocore_reader() -> Callable[[List[bytes]], int]:
    import botocore.session
    from botocore.eventstream import EventStream
    from botocore.parsers import EventStreamJSONParser

    model = botocore.session.get_session().get_service_model("bedrock-runtime")
    shape = model.operation_model("ConverseStream").output_shape.members["stream"]

    def read(reads: List[bytes]) -> int:
        count = 0
        for _event in EventStream(_Raw(reads), shape, EventStreamJSONParser(), "ConverseStream"):
            count += 1
        return count

    return read


def main(n_events: int, repeats: int) -> int:
    import botocore

    reads = build(n_events)
    readers: Dict[str, Callable[[List[bytes]], int]] = {
        "ours (decoder + JSON)": read_ours_json,
        "ours (decoder + translator)": read_ours_events,
        "botocore EventStream": _botocore_reader(),
    }
    counts = {name: read(reads) for name, read in readers.items()}  # warm-up
    if len(set(counts.values())) != 1:
        raise RuntimeError(f"the readers disagree on the event count: {counts}")
    cpu: Dict[str, List[float]] = {name: [] for name in readers}
    wall: Dict[str, List[float]] = {name: [] for name in readers}
    for _ in range(repeats):
        for name, read in readers.items():
            start, start_cpu = time.perf_counter(), time.thread_time()
            read(reads)
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(time.thread_time() - start_cpu)
    events = counts["botocore EventStream"]
    size = sum(map(len, reads))
    print(f"stream: {events} ConverseStream events, {size / 1e6:.2f} MB in {len(reads)} reads of {READ} bytes, "
          f"{repeats} interleaved runs each, medians shown")
    print(f"python {sys.version.split()[0]}, botocore {botocore.__version__}")
    print()
    header = f"{'reader':30s} {'median s':>9s} {'cpu s':>8s} {'events/s (cpu)':>15s}"
    print(header)
    print("-" * len(header))
    rates = {}
    for name in readers:
        rates[name] = events / statistics.median(cpu[name])
        print(f"{name:30s} {statistics.median(wall[name]):9.4f} {statistics.median(cpu[name]):8.4f} "
              f"{rates[name]:15.0f}")
    print()
    ratio = rates["ours (decoder + JSON)"] / rates["botocore EventStream"]
    verdict = "meets" if ratio >= TARGET_RATIO else "BELOW"
    print(f"ratio ours (decoder + JSON) / botocore (events per CPU-second): {ratio:.2f}  "
          f"({verdict} the {TARGET_RATIO} goal)")
    print(f"ratio ours (decoder + translator) / botocore: "
          f"{rates['ours (decoder + translator)'] / rates['botocore EventStream']:.2f}")
    return 0
