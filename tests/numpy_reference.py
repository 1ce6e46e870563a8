"""NumPy building blocks for the reference implementations in the layer tests.

Written from the papers' equations with plain loops where that reads closer to
the paper; they share no code with keras_textattn.
"""

import numpy as np


def softplus(x):
    return np.logaddexp(0.0, x)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def elu(x):
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0)))


def softmax_over(scores, keep):
    """Softmax of a 1-D score vector over the entries where `keep` is True; 0 elsewhere."""
    out = np.zeros_like(scores, dtype="float64")
    if keep.any():
        kept = scores[keep] - scores[keep].max()
        out[keep] = np.exp(kept) / np.exp(kept).sum()
    return out


def layer_norm(x, gamma, beta, epsilon):
    mean = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + epsilon) * gamma + beta


def conv1d_same(x, kernel, bias):
    """1-D convolution, 'same' zero padding. x: (time, in); kernel: (width, in, out)."""
    width = kernel.shape[0]
    left = (width - 1) // 2
    padded = np.pad(x, ((left, width - 1 - left), (0, 0)))
    return np.stack([sum(padded[t + k] @ kernel[k] for k in range(width)) + bias for t in range(len(x))])


def lstm(x, kernel, recurrent, bias):
    """One LSTM direction over x (time, in), Keras gate order i, f, c, o; returns (time, units)."""
    units = recurrent.shape[0]
    h, c, outputs = np.zeros(units), np.zeros(units), []
    for x_t in x:
        z = x_t @ kernel + h @ recurrent + bias
        i, f, g, o = (z[k * units : (k + 1) * units] for k in range(4))
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
        outputs.append(h)
    return np.array(outputs).reshape(len(x), units)
