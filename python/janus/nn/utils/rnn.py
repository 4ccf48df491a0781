"""janus.nn.utils.rnn: padding variable-length sequences into one batch.

pad_sequence is what collate functions of sequence models use.  Packed
sequences (pack_padded_sequence, PackedSequence) are not supported: janus's
recurrent layers take padded batches, masked by the caller."""
import janus

__all__ = ["pad_sequence"]


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
