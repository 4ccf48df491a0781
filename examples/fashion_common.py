"""What the two Fashion-MNIST examples share: loading the data as float
images, the training loop (DataLoader, zero_grad/backward/step, progress
lines, --steps early stop), test-set accuracy and the workflow options a
real run has (a checkpoint to resume from and save to, an accuracy check
before training, a new optimizer for a second phase).  Each example only
defines its model and defaults."""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import janus  # noqa: E402
import janus.nn as nn  # noqa: E402
from janus.datasets import fashion_mnist  # noqa: E402
from janus.utils.data import DataLoader, TensorDataset  # noqa: E402
from kernel_clock import kernel_figure, kernel_seconds  # noqa: E402


def load(image_shape):
    """((x_train, y_train), (x_test, y_test)); images float in [0, 1] of image_shape per sample."""
    out = []
    for train in (True, False):
        x, y = fashion_mnist(train=train)
        out.append(((x.float() / 255.0).view(x.shape[0], *image_shape), y))
    return out


def evaluate(model, x, y, batch=1000):
    model.eval()
    correct = 0
    with janus.no_grad():
        for i in range(0, x.shape[0], batch):
            correct += (model(x[i:i + batch]).argmax(1) == y[i:i + batch]).sum().item()
    model.train()
    return correct / x.shape[0]


def arguments(description, epochs, batch, lr, argv):
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--epochs", type=int, default=epochs)
    ap.add_argument("--steps", type=int, default=0, help="stop after this many steps (0: run all epochs)")
    ap.add_argument("--batch", type=int, default=batch)
    ap.add_argument("--lr", type=float, default=lr)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--train-size", type=int, default=0,
                    help="train on the first N images only (0: all); an epoch then ends sooner")
    ap.add_argument("--warmup", type=int, default=0, help="leave the first N steps out of the steps/s figure")
    ap.add_argument("--checkpoint", default="",
                    help="resume from this file (model and optimizer state) when it exists; save to it at the end")
    ap.add_argument("--eval-first", action="store_true",
                    help="print the test accuracy before training (of the untrained or resumed model)")
    ap.add_argument("--new-optimizer-at", type=int, default=0,
                    help="make a new optimizer at this step (a second phase starting from fresh optimizer state)")
    return ap


def train(model, make_opt, args, image_shape):
    """Train on the training split, then print and return test accuracy."""
    janus.manual_seed(args.seed)
    (xtr, ytr), (xte, yte) = load(image_shape)
    if args.train_size:
        xtr, ytr = xtr[:args.train_size], ytr[:args.train_size]
    loader = DataLoader(TensorDataset(xtr, ytr), batch_size=args.batch, shuffle=True,
                        generator=janus.Generator().manual_seed(args.seed))
    model = model()
    opt = make_opt(model.parameters())
    if args.checkpoint and os.path.exists(args.checkpoint):
        state = janus.load(args.checkpoint)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
    if args.eval_first:
        print(f"test accuracy before training {evaluate(model, xte, yte) * 100:.2f}%")
    loss_fn = nn.CrossEntropyLoss()
    step, t0, c0, k0 = 0, time.perf_counter(), time.process_time(), kernel_seconds()
    for epoch in range(args.epochs):
        for x, y in loader:
            if args.new_optimizer_at and step == args.new_optimizer_at:
                opt = make_opt(model.parameters())
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            step += 1
            if step == args.warmup:
                t0, c0, k0 = time.perf_counter(), time.process_time(), kernel_seconds()
            if step % 100 == 0 or step == 1:
                print(f"epoch {epoch} step {step:5d}  loss {loss.item():.4f}", flush=True)
            if args.steps and step >= args.steps:
                break
        if args.steps and step >= args.steps:
            break
    dt, cpu, kern = time.perf_counter() - t0, time.process_time() - c0, kernel_seconds() - k0
    timed = step - min(args.warmup, step)
    acc = evaluate(model, xte, yte)
    if args.checkpoint:
        janus.save({"model": model.state_dict(), "optimizer": opt.state_dict()}, args.checkpoint)
    print(f"test accuracy {acc * 100:.2f}%  ({timed / dt:.1f} steps/s over {timed} steps, "
          f"{1e3 * cpu / max(timed, 1):.3f} ms CPU/step{kernel_figure(kern, timed)})")
    return acc
