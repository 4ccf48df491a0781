"""janus.distributed: what a single-process script asks torch.distributed.

Scripts that can run with or without several processes guard their use of
it with is_available() / is_initialized(); janus runs one process, so both
are False and those scripts take their single-process path.  Any other name
(init_process_group, all_reduce, ...) raises the unsupported-name error
where it is used."""


def is_available():
    """False: janus has no process groups."""
    return False


def is_initialized():
    """False: no process group is ever initialized."""
    return False
