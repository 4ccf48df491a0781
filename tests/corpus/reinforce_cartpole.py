"""REINFORCE on CartPole, the environment written here in plain Python (the
classic-control dynamics, Euler steps): a small policy MLP, actions drawn
from torch.distributions.Categorical and their log_prob kept per step,
discounted returns computed backwards and normalized with mean/std, the
loss summed over the episode with an entropy bonus (dist.entropy()), Adam.
Comparing with PyTorch, the uniform numbers behind each draw are PyTorch's
(drawn once, in the file) and the action is the inverse CDF of the
policy's probabilities at them.  (The loss cancels to ~1% of its terms --
the returns are normalized to mean 0 -- so its float32 rounding is relative
to that: tests/python/test_corpus.py compares it with PyTorch at 1e-4.)"""
import math
import os

import torch
import torch.nn as nn
from torch.distributions import Categorical

INIT = os.environ.get("CORPUS_INIT")            # a torch.save file both libraries start from
EXACT = os.environ.get("CORPUS_EXACT") == "1"   # comparing with PyTorch: no dropout, no shuffling


def shared(make):
    """The initial state: made here, or loaded from INIT (and saved there the first time)."""
    if INIT and os.path.exists(INIT):
        return torch.load(INIT)
    state = make()
    if INIT:
        torch.save(state, INIT)
    return state


class CartPole:
    gravity, masscart, masspole, length, force_mag, tau = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02

    def __init__(self, seed):
        self.seed = seed

    def reset(self):
        self.seed = (self.seed * 1103515245 + 12345) % 2 ** 31
        r = [((self.seed >> (8 * i)) % 256) / 255.0 * 0.1 - 0.05 for i in range(4)]
        self.state = r
        return list(self.state)

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state
        force = self.force_mag if action == 1 else -self.force_mag
        total = self.masspole + self.masscart
        pml = self.masspole * self.length
        cos, sin = math.cos(theta), math.sin(theta)
        temp = (force + pml * theta_dot ** 2 * sin) / total
        theta_acc = (self.gravity * sin - cos * temp) / (self.length * (4.0 / 3.0 - self.masspole * cos ** 2 / total))
        x_acc = temp - pml * theta_acc * cos / total
        x, x_dot = x + self.tau * x_dot, x_dot + self.tau * x_acc
        theta, theta_dot = theta + self.tau * theta_dot, theta_dot + self.tau * theta_acc
        self.state = [x, x_dot, theta, theta_dot]
        done = abs(x) > 2.4 or abs(theta) > 12 * 2 * math.pi / 360
        return list(self.state), 1.0, done


class Policy(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, hidden), nn.Tanh(), nn.Linear(hidden, 2))

    def forward(self, obs):
        return torch.softmax(self.net(obs), dim=-1)


EPISODES, MAX_T, GAMMA, BETA = 24, 40, 0.99, 0.01
torch.manual_seed(0)
policy = Policy()
init = shared(lambda: {"model": policy.state_dict(), "u": torch.rand(EPISODES, MAX_T)})
policy.load_state_dict(init["model"])
opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
env = CartPole(seed=7)
eps = torch.finfo(torch.float32).eps
for episode in range(EPISODES):
    obs = env.reset()
    log_probs, entropies, rewards = [], [], []
    for t in range(MAX_T):
        probs = policy(torch.tensor(obs, dtype=torch.float32))
        dist = Categorical(probs)
        if EXACT:
            action = (probs.cumsum(0) < init["u"][episode, t]).sum().clamp(max=1)
        else:
            action = dist.sample()
        log_probs.append(dist.log_prob(action))
        entropies.append(dist.entropy())
        obs, reward, done = env.step(action.item())
        rewards.append(reward)
        if done:
            break
    returns, g = [], 0.0
    for r in reversed(rewards):
        g = r + GAMMA * g
        returns.insert(0, g)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + eps)
    loss = -(torch.stack(log_probs) * returns).sum() - BETA * torch.stack(entropies).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"episode {episode} length {len(rewards)} loss {loss.item():.9g}")
