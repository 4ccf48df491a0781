"""janus.autograd.profiler_util (torch.autograd.profiler_util): the event
objects the profilers return and what is printed or written from them.

FunctionEvent is one timed range of a profiled window (a record_function
block, a `ProfilerStep#N`, or a `janus::<op>` event: the kernels of one op
janus ran in one stretch of a range's own time, `janus::kernels` for a
replayed graph's, see janus/autograd/profiler.py);
FunctionEventAvg sums events under one key (the name, with the input shapes
when grouped by them); EventList is the list of either, with torch's
`table()`, `key_averages()`, `total_average()`, `self_cpu_time_total` and
`export_chrome_trace()`.  Times are microseconds, as torch's.  The table
has torch's layout (columns, widths, percent and time formats, the
"Self CPU time total" footer); device columns are not printed (janus times
no device work: every time here is host wall time).  Chrome traces are
torch's JSON trace format (complete "X" events, microsecond timestamps;
`.gz` paths are gzipped, as torch's).
"""
import gzip
import json
import os

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "Interval"]

# what sort_by may name, with torch's cuda/xpu/privateuse1 spellings mapped to device
_DEVICE_ALIASES = ("cuda", "xpu", "privateuse1")


def _format_time(time_us):
    """torch's _format_time."""
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_share(time_us, total_time_us):
    if total_time_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_time_us:.2f}%"


def _format_memory(nbytes):
    kb, mb, gb = 1024, 1024 * 1024, 1024 * 1024 * 1024
    if abs(nbytes) >= gb:
        return f"{nbytes / gb:.2f} Gb"
    if abs(nbytes) >= mb:
        return f"{nbytes / mb:.2f} Mb"
    if abs(nbytes) >= kb:
        return f"{nbytes / kb:.2f} Kb"
    return f"{nbytes} b"


class Interval:
    def __init__(self, start, end):
        self.start, self.end = start, end

    def elapsed_us(self):
        return self.end - self.start

    def __repr__(self):
        return f"Interval(start={self.start}, end={self.end})"


class _TimeFields:
    """The device and memory fields torch's events carry; janus measures none of them (always 0)."""
    device_time_total = self_device_time_total = 0.0
    cpu_memory_usage = self_cpu_memory_usage = 0
    device_memory_usage = self_device_memory_usage = 0
    flops = 0

    @property
    def cuda_time_total(self):
        return self.device_time_total

    @property
    def self_cuda_time_total(self):
        return self.self_device_time_total

    @property
    def cuda_memory_usage(self):
        return self.device_memory_usage

    @property
    def self_cuda_memory_usage(self):
        return self.self_device_memory_usage

    @property
    def device_time(self):
        return 0.0

    @property
    def cuda_time(self):
        return 0.0

    @property
    def cpu_time(self):
        return 0.0 if self.count == 0 else self.cpu_time_total / self.count


class FunctionEvent(_TimeFields):
    """One profiled range: name, thread, time_range (us), input_shapes, stack, cpu_parent/cpu_children.
    count is 1, except a janus::<op> or janus::kernels event's: the number of kernel calls it sums."""

    def __init__(self, id, name, thread, start_us, end_us, input_shapes=None, stack=None, count=1,
                 is_user_annotation=False, args=None, kernel_calls=0, kernel_time_us=0.0):
        self.id = id
        self.name = name
        self.thread = thread
        self.time_range = Interval(start_us, end_us)
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.stack = stack if stack is not None else []
        self.count = count
        self.is_user_annotation = is_user_annotation
        self.args = args
        self.kernel_calls = kernel_calls  # kernels janus ran inside the range (children's included)
        self.kernel_time_us = kernel_time_us
        self.trace_name = name  # the chrome trace's name: torch's "ProfilerStep#3" where name is "ProfilerStep*"
        self.cpu_children = []
        self.cpu_parent = None
        self.device_type = "CPU"
        self.is_async = False
        self.is_legacy = False
        self.node_id = -1
        self.scope = 0

    @property
    def key(self):
        return self.name

    @property
    def cpu_time_total(self):
        return self.time_range.elapsed_us()

    @property
    def self_cpu_time_total(self):
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    def append_cpu_child(self, child):
        self.cpu_children.append(child)

    def set_cpu_parent(self, parent):
        self.cpu_parent = parent

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} thread={self.thread} "
                f"cpu_time={_format_time(self.cpu_time_total)} start_us={self.time_range.start:.3f} "
                f"end_us={self.time_range.end:.3f} cpu_children={[c.id for c in self.cpu_children]} "
                f"input_shapes={self.input_shapes} count={self.count}>")


class FunctionEventAvg(_TimeFields):
    """The events of one key summed: count, cpu_time_total, self_cpu_time_total (cpu_time: the average)."""

    def __init__(self):
        self.key = None
        self.count = 0
        self.node_id = 0
        self.is_async = False
        self.is_remote = False
        self.is_legacy = False
        self.use_device = None
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.kernel_calls = 0
        self.kernel_time_us = 0.0
        self.input_shapes = None
        self.stack = None
        self.scope = None
        self.cpu_parent = None
        self.device_type = "CPU"
        self.is_user_annotation = False

    def add(self, other):
        if self.key is None:  # the first event sets the key's fields
            self.key = other.key
            self.node_id = other.node_id
            self.is_async = other.is_async
            self.is_legacy = other.is_legacy
            self.cpu_parent = other.cpu_parent
            self.input_shapes = other.input_shapes
            self.stack = other.stack
            self.scope = other.scope
            self.device_type = other.device_type
            self.is_user_annotation = other.is_user_annotation
        if not isinstance(other, (FunctionEvent, FunctionEventAvg)):
            raise AssertionError("Expected other to be a FunctionEvent or FunctionEventAvg")
        if other.key != self.key:
            raise AssertionError(f"Expected keys to match, but got {other.key} vs {self.key}")
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.count += other.count
        self.kernel_calls += other.kernel_calls
        self.kernel_time_us += other.kernel_time_us
        return self

    def __iadd__(self, other):
        return self.add(other)

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={_format_time(self.self_cpu_time_total)} "
                f"cpu_time={_format_time(self.cpu_time)} input_shapes={self.input_shapes}>")


class EventList(list):
    """A list of FunctionEvent (events()) or FunctionEventAvg (key_averages())."""

    def __init__(self, *args, **kwargs):
        kwargs.pop("use_device", None)
        kwargs.pop("profile_memory", None)
        kwargs.pop("with_flops", None)
        super().__init__(*args)

    @property
    def self_cpu_time_total(self):
        return sum(e.self_cpu_time_total for e in self)

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False, time_unit=None):
        """The events (or averages) as torch's profiler table, sorted by the named attribute, descending."""
        return _build_table(self, sort_by=sort_by, row_limit=row_limit, max_src_column_width=max_src_column_width,
                            max_name_column_width=max_name_column_width,
                            max_shapes_column_width=max_shapes_column_width, header=header,
                            top_level_events_only=top_level_events_only, time_unit=time_unit)

    def __str__(self):
        return self.table()

    def key_averages(self, group_by_input_shapes=False, group_by_stack_n=0, group_by_overload_name=False):
        """One FunctionEventAvg per key (the name; with str(input_shapes) when group_by_input_shapes;
        with the first group_by_stack_n stack frames when given), in first-seen order."""
        stats = {}
        for evt in self:
            key = (evt.key,)
            if group_by_input_shapes:
                key += (str(evt.input_shapes),)
            if group_by_stack_n > 0:
                key += tuple(evt.stack[:group_by_stack_n])
            if key not in stats:
                stats[key] = FunctionEventAvg()
            stats[key].add(evt)
        return EventList(stats.values())

    def total_average(self):
        total = FunctionEventAvg()
        for evt in self:
            total.cpu_time_total += evt.cpu_time_total
            total.self_cpu_time_total += evt.self_cpu_time_total
            total.count += evt.count
            total.kernel_calls += evt.kernel_calls
            total.kernel_time_us += evt.kernel_time_us
        total.key = "Total"
        return total

    def export_chrome_trace(self, path):
        """Write the events as a Chrome trace (JSON; gzipped when path ends in .gz), torch's layout."""
        trace = _chrome_trace(self)
        data = json.dumps(trace, indent=1)
        if str(path).endswith(".gz"):
            with gzip.open(path, "wt", encoding="utf-8") as f:
                f.write(data)
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(data)


def _chrome_trace(events, metadata=None):
    pid = os.getpid()
    out = []
    for e in events:
        if not isinstance(e, FunctionEvent):
            raise TypeError("export_chrome_trace: the events of a profile, not key averages")
        args = {"External id": e.id}
        if e.input_shapes:
            args["Input Dims"] = e.input_shapes
        if e.args is not None:
            args["Record function args"] = e.args
        if e.name.startswith("janus::"):
            args["Kernel calls"] = e.count
        if e.stack:
            args["Call stack"] = ";".join(e.stack)
        out.append({"ph": "X", "cat": "user_annotation" if e.is_user_annotation else "cpu_op", "name": e.trace_name,
                    "pid": pid, "tid": e.thread, "ts": round(e.time_range.start, 3),
                    "dur": round(e.cpu_time_total, 3), "args": args})
    trace = {"schemaVersion": 1, "deviceProperties": [], "traceEvents": out,
             "traceName": "janus", "displayTimeUnit": "ms"}
    if metadata:
        trace.update(metadata)
    return trace


def _build_table(events, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
                 max_shapes_column_width=80, header=None, top_level_events_only=False, time_unit=None):
    """torch.autograd.profiler_util._build_table's layout for the CPU columns."""
    if len(events) == 0:
        return ""
    if sort_by is not None:
        attr = sort_by
        for alias in _DEVICE_ALIASES:
            attr = attr.replace(alias, "device")
        events = EventList(sorted(events, key=lambda evt: getattr(evt, attr), reverse=True))
    has_input_shapes = any(e.input_shapes is not None and len(e.input_shapes) > 0 for e in events)
    has_stack = any(e.stack is not None and len(e.stack) > 0 for e in events)

    name_column_width = max(len(e.key) for e in events) + 4
    if max_name_column_width is not None:
        name_column_width = min(name_column_width, max_name_column_width)
    shapes_column_width = max(len(str(e.input_shapes)) for e in events) + 4
    if max_shapes_column_width is not None:
        shapes_column_width = min(shapes_column_width, max_shapes_column_width)
    src_column_width = max_src_column_width
    default_width = 12
    spacing = 2

    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"]
    row_format_lst, header_sep_lst, line_length_lst = [""], [""], [-spacing]

    def add_column(padding, text_dir=">"):
        row_format_lst[0] += "{: " + text_dir + str(padding) + "}" + (" " * spacing)
        header_sep_lst[0] += "-" * padding + (" " * spacing)
        line_length_lst[0] += padding + spacing

    add_column(name_column_width)
    for _ in headers[1:]:
        add_column(default_width)
    if has_input_shapes:
        headers.append("Input Shapes")
        add_column(shapes_column_width)
    if has_stack:
        headers.append("Source Location")
        add_column(src_column_width, text_dir="<")

    row_format, header_sep = row_format_lst[0], header_sep_lst[0]
    result = []

    def append(s):
        result.append(s)
        result.append("\n")

    sum_self_cpu_time_total = sum(e.self_cpu_time_total for e in events)

    def fmt_time(us):
        if time_unit == "s":
            return f"{us / 1e6:.3f}s"
        if time_unit == "ms":
            return f"{us / 1e3:.3f}ms"
        if time_unit == "us":
            return f"{us:.3f}us"
        return _format_time(us)

    if header is not None:
        append("=" * line_length_lst[0])
        append(header)
    if top_level_events_only:
        events = EventList(e for e in events if e.cpu_parent is None)
    append(header_sep)
    append(row_format.format(*headers))
    append(header_sep)

    def trim(s, width):
        return s[:width - 3] + "..." if len(s) > width else s

    shown = events if row_limit is None or row_limit <= 0 else events[:row_limit]
    for evt in shown:
        name = trim(evt.key, name_column_width)
        row = [name, _format_time_share(evt.self_cpu_time_total, sum_self_cpu_time_total),
               fmt_time(evt.self_cpu_time_total),
               _format_time_share(evt.cpu_time_total, sum_self_cpu_time_total) if not evt.is_async else 0,
               fmt_time(evt.cpu_time_total), fmt_time(evt.cpu_time), evt.count]
        if has_input_shapes:
            row.append(trim(str(evt.input_shapes), shapes_column_width))
        if has_stack:
            src = evt.stack[0] if evt.stack else ""
            row.append(trim(src, src_column_width))
        append(row_format.format(*row))
        if has_stack and evt.stack:
            for entry in evt.stack[1:]:
                filler = [""] * (len(headers) - 1)
                append(row_format.format(*filler, trim(entry, src_column_width)))
    append(header_sep)
    append(f"Self CPU time total: {fmt_time(sum_self_cpu_time_total)}")
    return "".join(result)
