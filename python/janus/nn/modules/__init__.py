"""The layers of janus.nn, laid out as torch.nn.modules is (activation,
batchnorm, channelshuffle, container, conv, distance, dropout, flatten, fold,
instancenorm, lazy, linear, loss, module, normalization, padding,
pixelshuffle, pooling, rnn, sparse, transformer, upsampling, utils), with
PyTorch's constructor arguments, parameter names and default
initializations (so state dicts and seeds carry over)."""
from .module import Module
from .activation import (CELU, ELU, GELU, GLU, Hardshrink, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU,
                         LogSigmoid, LogSoftmax, Mish, MultiheadAttention, PReLU, ReLU, ReLU6, SELU, Sigmoid, SiLU,
                         Softmax, Softmax2d, Softmin, Softplus, Softshrink, Softsign, Tanh, Tanhshrink, Threshold)
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from .channelshuffle import ChannelShuffle
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d
from .distance import CosineSimilarity, PairwiseDistance
from .dropout import AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d, FeatureAlphaDropout
from .flatten import Flatten, Unflatten
from .fold import Fold, Unfold
from .instancenorm import InstanceNorm1d, InstanceNorm2d
from .linear import Bilinear, Identity, LazyLinear, Linear
from .loss import (BCELoss, BCEWithLogitsLoss, CosineEmbeddingLoss, CrossEntropyLoss, CTCLoss, GaussianNLLLoss,
                   HingeEmbeddingLoss, HuberLoss, KLDivLoss, L1Loss, MarginRankingLoss, MSELoss,
                   MultiLabelMarginLoss, MultiLabelSoftMarginLoss, MultiMarginLoss, NLLLoss, PoissonNLLLoss,
                   SmoothL1Loss, SoftMarginLoss, TripletMarginLoss, TripletMarginWithDistanceLoss)
from .normalization import GroupNorm, LayerNorm, LocalResponseNorm, RMSNorm
from .padding import (CircularPad1d, CircularPad2d, CircularPad3d, ConstantPad1d, ConstantPad2d, ConstantPad3d,
                      ReflectionPad1d, ReflectionPad2d, ReflectionPad3d, ReplicationPad1d, ReplicationPad2d,
                      ReplicationPad3d, ZeroPad1d, ZeroPad2d, ZeroPad3d)
from .pixelshuffle import PixelShuffle, PixelUnshuffle
from .pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool1d, AdaptiveMaxPool2d, AvgPool1d, AvgPool2d,
                      LPPool1d, LPPool2d, MaxPool1d, MaxPool2d, MaxUnpool1d, MaxUnpool2d)
from .rnn import GRU, GRUCell, LSTM, LSTMCell, RNN, RNNCell
from .sparse import Embedding, EmbeddingBag
from .upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d
from .transformer import (Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder,
                          TransformerEncoderLayer)

__all__ = [
    "Module", "CELU", "ELU", "GELU", "GLU", "Hardshrink", "Hardsigmoid", "Hardswish", "Hardtanh", "LeakyReLU",
    "LogSigmoid", "LogSoftmax", "Mish", "MultiheadAttention", "PReLU", "ReLU", "ReLU6", "SELU", "Sigmoid", "SiLU",
    "Softmax", "Softmin", "Softplus", "Softshrink", "Softsign", "Tanh", "Tanhshrink", "Threshold",
    "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "ModuleDict", "ModuleList", "ParameterDict", "ParameterList",
    "Sequential", "CosineSimilarity", "PairwiseDistance", "InstanceNorm1d", "InstanceNorm2d",
    "CircularPad1d", "CircularPad2d", "ConstantPad1d", "ConstantPad2d", "ReflectionPad1d", "ReflectionPad2d",
    "ReplicationPad1d", "ReplicationPad2d", "ZeroPad1d", "ZeroPad2d", "Upsample", "UpsamplingBilinear2d",
    "UpsamplingNearest2d",
    "Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d",
    "Flatten", "Unflatten", "Identity", "Linear", "BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "HuberLoss",
    "KLDivLoss", "L1Loss", "MSELoss", "NLLLoss", "SmoothL1Loss", "CosineEmbeddingLoss", "GaussianNLLLoss",
    "HingeEmbeddingLoss", "MarginRankingLoss", "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss",
    "MultiMarginLoss", "PoissonNLLLoss", "SoftMarginLoss", "TripletMarginLoss", "TripletMarginWithDistanceLoss",
    "CTCLoss",
    "GroupNorm", "LayerNorm", "RMSNorm",
    "PixelShuffle", "PixelUnshuffle", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d", "AvgPool1d", "AvgPool2d",
    "MaxUnpool1d", "MaxUnpool2d",
    "MaxPool1d", "MaxPool2d", "GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNCell", "Embedding",
    "Transformer", "TransformerDecoder", "TransformerDecoderLayer", "TransformerEncoder", "TransformerEncoderLayer",
    "Bilinear", "LazyLinear", "EmbeddingBag", "LocalResponseNorm", "Softmax2d", "AlphaDropout", "FeatureAlphaDropout",
    "LPPool1d", "LPPool2d", "Fold", "Unfold", "ChannelShuffle", "ZeroPad3d", "ConstantPad3d", "ReflectionPad3d",
    "ReplicationPad3d", "CircularPad3d",
]
