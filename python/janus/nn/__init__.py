"""janus.nn: modules, layers, losses, functional forms and initializers with
PyTorch's names and semantics."""
from . import functional, init, utils  # noqa: F401
from .module import Module  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import (AdaptiveAvgPool2d, AvgPool2d, BatchNorm1d, BatchNorm2d, BCEWithLogitsLoss,  # noqa: F401
                      Conv2d, CrossEntropyLoss, Dropout, Embedding, Flatten, GELU, GRU, GRUCell,
                      Identity, L1Loss, LayerNorm, Linear, LogSoftmax, LSTM, LSTMCell, MaxPool2d,
                      ModuleDict, ModuleList, MSELoss, NLLLoss, ReLU, RNN, RNNCell, Sequential,
                      Sigmoid, SiLU, Softmax, Tanh)
from .parameter import Parameter  # noqa: F401
