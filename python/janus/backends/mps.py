"""janus.backends.mps: Apple's Metal backend, which janus does not have."""


def is_available():
    return False


def is_built():
    return False
