"""janus.nn.utils.rnn: variable-length sequences in one batch.

pad_sequence stacks sequences into a padded batch (what collate functions
of sequence models use).  pack_padded_sequence / pack_sequence make a
PackedSequence, as PyTorch lays it out: `data` holds time step 0 of every
sequence, then step 1 of those still running, ... (sequences sorted by
decreasing length), `batch_sizes[t]` says how many run at step t, and
`sorted_indices` / `unsorted_indices` map between the caller's order and
the sorted one.  janus's RNN, LSTM and GRU take one and return one (each
sequence stops at its own length; h_n holds each one's last step), and
pad_packed_sequence turns it back into a padded batch and lengths.

Packing and unpacking are one index_select each (through the positions
_packed_positions lists), not a slice per time step: a graph of a recorded
training step then has one varying length (the packed total) instead of
one per step."""
from collections import namedtuple

import janus

__all__ = ["pad_sequence", "PackedSequence", "pack_padded_sequence", "pad_packed_sequence", "pack_sequence",
           "unpad_sequence", "unpack_sequence"]


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack sequences of shape (L_i, *) into (max L, B, *) (or (B, max L, *)
    with batch_first), filling with padding_value on padding_side."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"padding_side must be 'left' or 'right', got {padding_side!r}")
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    longest = max(s.shape[0] for s in sequences)
    rows = []
    for s in sequences:
        n = longest - s.shape[0]
        if n:
            fill = janus.full([n] + list(s.shape[1:]), padding_value, dtype=s.dtype, device=s.device)
            s = janus.cat([s, fill] if padding_side == "right" else [fill, s], 0)
        rows.append(s)
    return janus.stack(rows, 0 if batch_first else 1)


class PackedSequence(namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """(data, batch_sizes, sorted_indices, unsorted_indices): see the module doc."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = _invert(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        return self if data is self.data else type(self)(data, self.batch_sizes, self.sorted_indices,
                                                          self.unsorted_indices)

    def cpu(self):
        return self.to("cpu")

    def float(self):
        return self.to(janus.float32)

    def double(self):
        return self.to(janus.float64)

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return False


def _invert(perm):
    return perm.argsort()


def _lengths_list(lengths):
    if isinstance(lengths, janus.Tensor):
        if lengths.dim() != 1:
            raise RuntimeError(f"lengths must be a 1D tensor, got {lengths.dim()}D")
        return [int(v) for v in lengths.tolist()]
    return [int(v) for v in lengths]


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """A padded batch (T, B, *) (or (B, T, *)) and each sequence's length ->
    a PackedSequence."""
    lens = _lengths_list(lengths)
    if batch_first:
        input = input.transpose(0, 1)
    if len(lens) != input.shape[1]:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lens)} (batch_size="
                           f"{input.shape[1]})")
    if any(n <= 0 for n in lens):
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    if enforce_sorted:
        if any(a < b for a, b in zip(lens, lens[1:])):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence "
                               "to sidestep this requirement if you do not need ONNX exportability.")
        sorted_indices = unsorted_indices = None
    else:
        order = sorted(range(len(lens)), key=lambda i: -lens[i])
        sorted_indices = janus.tensor(order, dtype=janus.int64)
        unsorted = [0] * len(order)
        for k, i in enumerate(order):
            unsorted[i] = k
        unsorted_indices = janus.tensor(unsorted, dtype=janus.int64)
        input = input.index_select(1, sorted_indices)
        lens = [lens[i] for i in order]
    if lens[0] > input.shape[0]:
        raise RuntimeError(f"a sequence of length {lens[0]} in a batch padded to {input.shape[0]} steps")
    batch_sizes = [sum(1 for n in lens if n > t) for t in range(lens[0])]
    T, N = len(batch_sizes), len(lens)
    rows = input[:T].reshape([T * N] + list(input.shape[2:]))
    data = rows.index_select(0, janus._functions._data_index(_packed_positions(batch_sizes)))
    return PackedSequence(data, janus.tensor(batch_sizes, dtype=janus.int64), sorted_indices, unsorted_indices)


def _packed_positions(batch_sizes):
    """Where each row of a packed `data` sits in the (T * N) rows of its
    padded (T, N) layout (N = batch_sizes[0])."""
    N = batch_sizes[0]
    return [t * N + i for t, b in enumerate(batch_sizes) for i in range(b)]


def _padded_sources(batch_sizes, n_data):
    """For each of the T * N padded rows, the packed row it comes from, or
    n_data (a padding row appended after the data)."""
    N, src, k = batch_sizes[0], [], 0
    for b in batch_sizes:
        src += list(range(k, k + b)) + [n_data] * (N - b)
        k += b
    return src


def _unpack(data, batch_sizes, padding_value=0.0):
    """(T, N, *) padded rows of a packed `data`."""
    T, N = len(batch_sizes), batch_sizes[0]
    pad = janus.full([1] + list(data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
    src = janus.tensor(_padded_sources(batch_sizes, data.shape[0]), dtype=janus.int64)
    return janus.cat([data, pad], 0).index_select(0, src).view([T, N] + list(data.shape[1:]))


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """A PackedSequence -> (padded batch, lengths), in the caller's order."""
    data, batch_sizes = sequence.data, [int(b) for b in janus._C._host_tolist(sequence.batch_sizes)]
    T, B = len(batch_sizes), batch_sizes[0]
    if total_length is not None and total_length < T:
        raise ValueError(f"Expected total_length to be at least the length of the longest sequence in input, "
                         f"but got total_length={total_length} and max sequence length being {T}")
    out = _unpack(data, batch_sizes, padding_value)
    if total_length is not None:  # a cat even of no rows: the same ops whatever the longest length
        fill = janus.full([total_length - T, B] + list(data.shape[1:]), padding_value, dtype=data.dtype,
                          device=data.device)
        out = janus.cat([out, fill], 0)
    lengths = janus.tensor([sum(1 for b in batch_sizes if b > i) for i in range(B)], dtype=janus.int64)
    if sequence.unsorted_indices is not None:
        out = out.index_select(1, sequence.unsorted_indices)
        lengths = lengths[sequence.unsorted_indices]
    return (out.transpose(0, 1) if batch_first else out), lengths


def pack_sequence(sequences, enforce_sorted=True):
    """A list of (L_i, *) tensors -> a PackedSequence."""
    return pack_padded_sequence(pad_sequence(sequences), [s.shape[0] for s in sequences],
                                enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [padded_sequences[i, :n] for i, n in enumerate(_lengths_list(lengths))]


def unpack_sequence(packed_sequences):
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
