"""Real data sets read from local files, returned as janus tensors.

fashion_mnist() reads the IDX files that Debian's `dataset-fashion-mnist`
package installs in /usr/share/datasets/fashion-mnist (gzip-compressed
idx3/idx1).  Missing or corrupt files raise an error naming the file and the
fix instead of failing later with a shape error.
"""
import gzip
import os
import struct

FASHION_ROOT = "/usr/share/datasets/fashion-mnist"
FASHION_CLASSES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
                   "Sneaker", "Bag", "Ankle boot")


def _read_idx(path, magic, ndim):
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"{path} not found: install the data set with `apt-get install dataset-fashion-mnist` "
            f"or pass root= pointing at a folder with the gzip'd IDX files")
    try:
        with gzip.open(path, "rb") as f:
            raw = f.read()
    except (OSError, EOFError) as e:
        raise ValueError(f"{path} is not a readable gzip file ({e}); re-install the data set") from None
    if len(raw) < 4 + 4 * ndim or struct.unpack(">I", raw[:4])[0] != magic:
        raise ValueError(f"{path} is not an IDX file with magic {magic:#x}")
    dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    n = 1
    for d in dims:
        n *= d
    body = raw[4 + 4 * ndim:]
    if len(body) != n:
        raise ValueError(f"{path} is truncated or corrupt: header says {dims} "
                         f"({n} bytes) but {len(body)} bytes follow")
    return dims, body


def fashion_mnist(train=True, root=FASHION_ROOT):
    """(images uint8 [N, 28, 28], labels int64 [N]) of the train or test split."""
    import janus
    split = "train" if train else "t10k"
    (n, h, w), img = _read_idx(os.path.join(root, f"{split}-images-idx3-ubyte.gz"), 0x803, 3)
    (m,), lab = _read_idx(os.path.join(root, f"{split}-labels-idx1-ubyte.gz"), 0x801, 1)
    if n != m:
        raise ValueError(f"Fashion-MNIST {split}: {n} images but {m} labels")
    images = janus.frombuffer(bytearray(img), dtype=janus.uint8).view(n, h, w)
    labels = janus.frombuffer(bytearray(lab), dtype=janus.uint8).long()
    return images, labels
