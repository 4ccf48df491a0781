"""Named tuples returned by ops with several outputs (like torch.return_types)."""
import collections as _collections

max = _collections.namedtuple("max", ["values", "indices"], module=__name__)
min = _collections.namedtuple("min", ["values", "indices"], module=__name__)
max_pool2d_with_indices = _collections.namedtuple("max_pool2d_with_indices", ["values", "indices"],
                                                  module=__name__)
sort = _collections.namedtuple("sort", ["values", "indices"], module=__name__)
topk = _collections.namedtuple("topk", ["values", "indices"], module=__name__)
kthvalue = _collections.namedtuple("kthvalue", ["values", "indices"], module=__name__)
median = _collections.namedtuple("median", ["values", "indices"], module=__name__)
