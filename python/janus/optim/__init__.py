"""janus.optim: optimizers and learning-rate schedulers with PyTorch's API
and update formulas (torch.optim's single-tensor implementations)."""
from . import lr_scheduler
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam
from .adamax import Adamax
from .adamw import AdamW
from .asgd import ASGD
from .lbfgs import LBFGS
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from . import swa_utils  # after the optimizers: it imports janus.nn and lr_scheduler

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "LBFGS", "NAdam", "RAdam",
           "Adamax", "ASGD", "Rprop", "Adafactor", "lr_scheduler", "swa_utils"]
