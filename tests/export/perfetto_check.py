"""Reads a `lantern export --format perfetto` file with the protobuf definitions the `perfetto`
Python package ships (perfetto.protos.perfetto.trace.perfetto_trace_pb2, generated from
Perfetto's own .proto files) and rebuilds what a Perfetto reader sees: tracks, slices (BEGIN
and END matched per track, in time order), instants, counters and flows, while checking the
rules a reader relies on (each sequence's incremental state cleared first, its delta clock
defined by a clock snapshot, every interned id and track defined before use on its
sequence, slices nested per track, every terminating flow started by one event).
Used by tests/export/test_perfetto.py (CI) and tests/gpu/test_perfetto_gpu.py (GPU machine)."""
import collections

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

TrackEvent = pb.TrackEvent


class Decoded:
    def __init__(self):
        self.tracks = {}      # uuid -> TrackDescriptor
        self.slices = []      # dicts: track, name, category, ts, end, args, flow_ids, terminating
        self.instants = []    # dicts: track, name, category, ts, args
        self.counters = collections.defaultdict(list)  # track uuid -> [(ts, value)]
        self.problems = []
        self.packets = 0

    def track_name(self, uuid):
        t = self.tracks[uuid]
        if t.HasField("thread"):
            return t.thread.thread_name
        if t.HasField("process"):
            return t.process.process_name
        return t.name

    def slices_on(self, predicate):
        return [s for s in self.slices if predicate(self.tracks[s["track"]])]


def _args(ev, annotation_names):
    out = {}
    for a in ev.debug_annotations:
        name = annotation_names.get(a.name_iid, a.name)
        kind = a.WhichOneof("value")
        out[name] = getattr(a, kind) if kind else None
    return out


class _Sequence:
    """What a reader keeps per trusted_packet_sequence_id: interned data, defaults, clocks."""

    def __init__(self):
        self.cleared = False
        self.names, self.categories, self.annotation_names = {}, {}, {}
        self.clock_id = None        # TracePacketDefaults.timestamp_clock_id
        self.track = None           # TrackEventDefaults.track_uuid
        self.incremental = {}       # clock id -> [last value, offset to the MONOTONIC clock]


MONOTONIC = pb.BuiltinClock.BUILTIN_CLOCK_MONOTONIC


def _timestamp(seq, packet, order, problems):
    """The packet's time on CLOCK_MONOTONIC, following the sequence's clocks."""
    clock = packet.timestamp_clock_id if packet.HasField("timestamp_clock_id") else seq.clock_id
    if clock in (None, MONOTONIC, pb.BuiltinClock.BUILTIN_CLOCK_BOOTTIME):
        return packet.timestamp
    if clock not in seq.incremental:
        problems.append(f"packet {order}: clock {clock} has no snapshot on its sequence")
        return packet.timestamp
    state = seq.incremental[clock]
    state[0] += packet.timestamp
    return state[0] + state[1]


def decode(path):
    trace = pb.Trace()
    with open(path, "rb") as f:
        trace.ParseFromString(f.read())
    d = Decoded()
    sequences = collections.defaultdict(_Sequence)
    pending = []  # (ts, order, kind, record, event)
    for order, packet in enumerate(trace.packet):
        d.packets += 1
        seq = sequences[packet.trusted_packet_sequence_id]
        if packet.sequence_flags & pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED:
            sequences[packet.trusted_packet_sequence_id] = seq = _Sequence()
            seq.cleared = True
        if packet.HasField("clock_snapshot"):
            clocks = {c.clock_id: c for c in packet.clock_snapshot.clocks}
            if MONOTONIC not in clocks:
                d.problems.append(f"packet {order}: clock snapshot without CLOCK_MONOTONIC")
            for c in clocks.values():
                if c.is_incremental:
                    seq.incremental[c.clock_id] = [c.timestamp, clocks[MONOTONIC].timestamp - c.timestamp]
        if packet.HasField("trace_packet_defaults"):
            defaults = packet.trace_packet_defaults
            seq.clock_id = defaults.timestamp_clock_id
            seq.track = defaults.track_event_defaults.track_uuid
        if packet.HasField("interned_data"):
            if not seq.cleared:
                d.problems.append(f"packet {order}: interned data before the state was cleared")
            for e in packet.interned_data.event_names:
                seq.names[e.iid] = e.name
            for e in packet.interned_data.event_categories:
                seq.categories[e.iid] = e.name
            for e in packet.interned_data.debug_annotation_names:
                seq.annotation_names[e.iid] = e.name
        if packet.HasField("track_descriptor"):
            if packet.track_descriptor.uuid in d.tracks:
                d.problems.append(f"packet {order}: track {packet.track_descriptor.uuid} described twice")
            d.tracks[packet.track_descriptor.uuid] = packet.track_descriptor
        if not packet.HasField("track_event"):
            continue
        ev = packet.track_event
        track = ev.track_uuid if ev.HasField("track_uuid") else seq.track
        ts = _timestamp(seq, packet, order, d.problems)
        if not packet.sequence_flags & pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE:
            d.problems.append(f"packet {order}: event without SEQ_NEEDS_INCREMENTAL_STATE")
        if track not in d.tracks:
            d.problems.append(f"packet {order}: track {track} used before its descriptor")
        if ev.HasField("name_iid") and ev.name_iid not in seq.names:
            d.problems.append(f"packet {order}: name iid {ev.name_iid} not interned")
        for iid in ev.category_iids:
            if iid not in seq.categories:
                d.problems.append(f"packet {order}: category iid {iid} not interned")
        for a in ev.debug_annotations:
            if a.name_iid and a.name_iid not in seq.annotation_names:
                d.problems.append(f"packet {order}: annotation name {a.name_iid} not interned")
        record = {"track": track, "name": seq.names.get(ev.name_iid),
                  "category": [seq.categories.get(i) for i in ev.category_iids],
                  "ts": ts, "args": _args(ev, seq.annotation_names),
                  "flow_ids": list(ev.flow_ids), "terminating": list(ev.terminating_flow_ids),
                  "sequence": packet.trusted_packet_sequence_id}
        pending.append((ts, order, ev.type, record, ev))
    # a reader sorts by time (file order breaks ties), then matches BEGIN/END per track
    pending.sort(key=lambda p: (p[0], p[1]))
    stacks = collections.defaultdict(list)
    for ts, order, kind, record, ev in pending:
        if kind == TrackEvent.TYPE_SLICE_BEGIN:
            stacks[record["track"]].append(record)
        elif kind == TrackEvent.TYPE_SLICE_END:
            if not stacks[record["track"]]:
                d.problems.append(f"packet {order}: END with no open slice on track {record['track']}")
                continue
            begin = stacks[record["track"]].pop()
            begin["end"] = ts
            d.slices.append(begin)
        elif kind == TrackEvent.TYPE_INSTANT:
            d.instants.append(record)
        elif kind == TrackEvent.TYPE_COUNTER:
            d.counters[record["track"]].append((ts, ev.double_counter_value))
    for track, stack in stacks.items():
        if stack:
            d.problems.append(f"track {track}: {len(stack)} slices never ended")
    started = collections.Counter(f for s in d.slices for f in s["flow_ids"])
    for s in d.slices:
        for f in s["terminating"]:
            if started[f] != 1:
                d.problems.append(f"flow {f} ends at {s['name']} but is started {started[f]} times")
    return d


def flows(d):
    """{flow id: (starting slice, ending slice)}."""
    starts = {f: s for s in d.slices for f in s["flow_ids"]}
    return {f: (starts.get(f), s) for s in d.slices for f in s["terminating"]}
