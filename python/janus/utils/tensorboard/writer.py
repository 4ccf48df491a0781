"""torch.utils.tensorboard.writer for janus: SummaryWriter and FileWriter
writing TensorBoard event files without the tensorboard or protobuf
packages.

An event file is named as TensorBoard's EventFileWriter names it
(`events.out.tfevents.<%010d time>.<host>.<pid>.<n><suffix>`, n counting
the files this process opened) and starts with an Event holding wall_time
and file_version "brain.Event:2", written at once.  Later events wait in
a per-file queue: it is written and flushed when max_queue events are
pending or flush_secs have passed since the last flush (checked on each
add), on flush()/close(), and when the writer is collected or the
interpreter exits (a weakref.finalize, which also closes the file).
PyTorch writes from a background thread; janus writes in the calling
thread, so an add may cost a disk write.

SummaryWriter follows torch's writer.py: default log_dir
`runs/<%b%d_%H-%M-%S>_<host><comment>`, purge_step (an Event with the
step and file_version, then a SessionLog START, which makes TensorBoard
drop the events of the same run at or past that step), add_scalars'
sub-writers in `<log_dir>/<main_tag>_<tag>`, add_hparams' sub-run, and a
closed writer reopening a new file on the next add.  FileWriter's
add_event/add_summary take serialized protobuf bytes (janus has no
protobuf objects): an Event's `what` field, a Summary message.
"""
import itertools
import os
import socket
import threading
import time
import weakref

from ... import _unsupported
from . import _wire

__all__ = ["FileWriter", "SummaryWriter"]


def _summaries():
    # imported with the first summary, not with janus: it needs numpy, which
    # `import janus` does not load
    from . import _summary
    return _summary


def _default_bins():
    """TensorBoard's default bucket edges (SummaryWriter.default_bins): a
    geometric series of ratio 1.1 from 1e-12 to 1e20, mirrored, and 0."""
    v = 1e-12
    buckets = []
    neg_buckets = []
    while v < 1e20:
        buckets.append(v)
        neg_buckets.append(-v)
        v *= 1.1
    return neg_buckets[::-1] + [0] + buckets


# the n in the file names: one counter per process, as tensorboard's _global_uid
_file_uid = itertools.count()


def _drain(state):
    """Write the pending records and flush (state: [file, pending list, pid])."""
    f, pending, _ = state
    if f is None or f.closed:
        return
    if pending:
        f.write(b"".join(pending))
        pending.clear()
    f.flush()


def _finalize(state):
    # at collection or interpreter exit: nothing queued is lost; a forked
    # child (a DataLoader worker) leaves the parent's queue to the parent
    if state[2] != os.getpid():
        return
    _drain(state)
    if state[0] is not None and not state[0].closed:
        state[0].close()


class _EventFileWriter:
    """One event file: TFRecord framing, the queue and its flush policy."""

    def __init__(self, logdir, max_queue_size=10, flush_secs=120, filename_suffix=""):
        self._logdir = logdir
        self._max_queue = max_queue_size
        self._flush_secs = flush_secs
        self._suffix = filename_suffix
        self._lock = threading.Lock()
        self._open()

    def _open(self):
        os.makedirs(self._logdir, exist_ok=True)
        self._file_name = os.path.join(
            self._logdir, "events.out.tfevents.%010d.%s.%s.%s" % (
                time.time(), socket.gethostname(), os.getpid(), next(_file_uid))) + self._suffix
        self._state = [open(self._file_name, "wb"), [], os.getpid()]
        self._finalizer = weakref.finalize(self, _finalize, self._state)
        self._closed = False
        self._last_flush = time.time()
        self.add_event(_wire.event_header(time.time()) + _wire.what_file_version())
        self.flush()

    def get_logdir(self):
        return self._logdir

    def add_event(self, event):
        """Queue one serialized Event."""
        with self._lock:
            if self._closed:
                raise OSError("Writer is closed")
            self._state[1].append(_wire.tfrecord(event))
            if len(self._state[1]) >= self._max_queue or time.time() - self._last_flush >= self._flush_secs:
                self._flush_locked()

    def _flush_locked(self):
        _drain(self._state)
        self._last_flush = time.time()

    def flush(self):
        with self._lock:
            if not self._closed:
                self._flush_locked()

    def close(self):
        with self._lock:
            if not self._closed:
                self._closed = True
                self._finalizer()  # drains, flushes and closes; runs once

    def reopen(self):
        """After close(): continue in a new event file in the same directory."""
        with self._lock:
            if not self._closed:
                return
        self._open()


class FileWriter:
    """Writes Event records to an event file in log_dir (torch's FileWriter);
    add_event/add_summary take serialized protobuf bytes."""

    def __init__(self, log_dir, max_queue=10, flush_secs=120, filename_suffix=""):
        log_dir = str(log_dir)
        self.event_writer = _EventFileWriter(log_dir, max_queue, flush_secs, filename_suffix)

    def get_logdir(self):
        """Return the directory where event file will be written."""
        return self.event_writer.get_logdir()

    def add_event(self, event, step=None, walltime=None):
        """Add an Event: event is the serialized `what` part (a summary, a
        file_version, a session_log); wall_time and step are set here as
        torch's FileWriter sets them on the Event."""
        walltime = time.time() if walltime is None else walltime
        self.event_writer.add_event(_wire.event_header(walltime, None if step is None else int(step)) + event)

    def add_summary(self, summary, global_step=None, walltime=None):
        """Add a serialized Summary message wrapped in an Event."""
        self.add_event(_wire.what_summary(summary), global_step, walltime)

    def flush(self):
        """Write every pending event to disk."""
        self.event_writer.flush()

    def close(self):
        """Flush and close the event file."""
        self.event_writer.close()

    def reopen(self):
        """After close(): continue in a new event file in the same directory."""
        self.event_writer.reopen()


# SummaryWriter methods torch has and janus does not; ALTERNATIVES in
# janus/_unsupported.py says what to use instead
_UNSUPPORTED = frozenset((
    "add_graph", "add_onnx_graph", "add_embedding", "add_audio", "add_video", "add_figure",
    "add_image_with_boxes", "add_pr_curve", "add_pr_curve_raw", "add_mesh", "add_custom_scalars",
    "add_custom_scalars_multilinechart", "add_custom_scalars_marginchart"))


class SummaryWriter:
    """Writes entries directly to event files in the log_dir to be consumed
    by TensorBoard (torch.utils.tensorboard.SummaryWriter)."""

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120,
                 filename_suffix=""):
        if not log_dir:
            from datetime import datetime
            current_time = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", current_time + "_" + socket.gethostname() + comment)
        self.log_dir = log_dir
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer = self.all_writers = None
        self._get_file_writer()
        self.default_bins = _default_bins()

    def __getattr__(self, name):
        if name in _UNSUPPORTED:
            raise _unsupported.UnsupportedAttributeError("janus.utils.tensorboard.SummaryWriter", name,
                                                         _unsupported.where(2))
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def _get_file_writer(self):
        """The default FileWriter; a new one (a new file) after close()."""
        if self.all_writers is None or self.file_writer is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs, self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                most_recent_step = self.purge_step
                self.file_writer.add_event(_wire.what_file_version(), step=most_recent_step)
                self.file_writer.add_event(_wire.what_session_log(_wire.SESSION_LOG_START), step=most_recent_step)
                self.purge_step = None
        return self.file_writer

    def get_logdir(self):
        """Return the directory where event files will be written."""
        return self.log_dir

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None,
                    global_step=None):
        """Add a set of hyperparameters to be compared in TensorBoard: the
        hparams plugin's summaries and the metrics as scalars, in the run
        <log_dir>/<run_name> (run_name defaults to the current time)."""
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        exp, ssi, sei = _summaries().hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        if not run_name:
            run_name = str(time.time())
        logdir = os.path.join(self._get_file_writer().get_logdir(), run_name)
        with SummaryWriter(log_dir=logdir) as w_hp:
            w_hp.file_writer.add_summary(exp, global_step)
            w_hp.file_writer.add_summary(ssi, global_step)
            w_hp.file_writer.add_summary(sei, global_step)
            for k, v in metric_dict.items():
                w_hp.add_scalar(k, v, global_step)

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False):
        """Add scalar data to summary (simple_value, or with new_style a
        float32/float64 tensor of the scalars plugin)."""
        summary = _summaries().scalar(tag, scalar_value, new_style=new_style, double_precision=double_precision)
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Add many scalars under main_tag, each in its own run
        <log_dir>/<main_tag with / as _>_<tag>."""
        walltime = time.time() if walltime is None else walltime
        fw_logdir = self._get_file_writer().get_logdir()
        for tag, scalar_value in tag_scalar_dict.items():
            fw_tag = fw_logdir + "/" + main_tag.replace("/", "_") + "_" + tag
            if fw_tag in self.all_writers:
                fw = self.all_writers[fw_tag]
            else:
                fw = FileWriter(fw_tag, self.max_queue, self.flush_secs, self.filename_suffix)
                self.all_writers[fw_tag] = fw
            fw.add_summary(_summaries().scalar(main_tag, scalar_value), global_step, walltime)

    def add_tensor(self, tag, tensor, global_step=None, walltime=None):
        """Add tensor data to summary (plugin "tensor")."""
        self._get_file_writer().add_summary(_summaries().tensor(tag, tensor), global_step, walltime)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None, max_bins=None):
        """Add a histogram; bins: 'tensorflow' (default_bins), or anything
        numpy.histogram takes (an int, edges, 'auto', 'fd', ...)."""
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._get_file_writer().add_summary(_summaries().histogram(tag, values, bins, max_bins=max_bins),
                                            global_step, walltime)

    def add_histogram_raw(self, tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts,
                          global_step=None, walltime=None):
        """Add a histogram from its statistics and buckets."""
        if len(bucket_limits) != len(bucket_counts):
            raise ValueError("len(bucket_limits) != len(bucket_counts), see the document.")
        self._get_file_writer().add_summary(
            _summaries().histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts),
            global_step, walltime)

    def add_image(self, tag, img_tensor, global_step=None, walltime=None, dataformats="CHW"):
        """Add an image: float in [0, 1] or uint8 in [0, 255]; dataformats
        CHW, HWC, HW (or any order of those letters)."""
        self._get_file_writer().add_summary(_summaries().image(tag, img_tensor, dataformats=dataformats),
                                            global_step, walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None, dataformats="NCHW"):
        """Add a batch of images, tiled 8 per row into one image."""
        self._get_file_writer().add_summary(_summaries().image(tag, img_tensor, dataformats=dataformats),
                                            global_step, walltime)

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        """Add text (markdown) under tag + '/text_summary'."""
        self._get_file_writer().add_summary(_summaries().text(tag, text_string), global_step, walltime)

    def flush(self):
        """Flush the event files to disk."""
        if self.all_writers is None:
            return
        for writer in self.all_writers.values():
            writer.flush()

    def close(self):
        """Flush and close every event file of this writer."""
        if self.all_writers is None:
            return  # ignore double close
        for writer in self.all_writers.values():
            writer.flush()
            writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()
