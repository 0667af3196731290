"""Demo section: a short DARTS search on scikit-learn's digits (train loss and accuracy per epoch, the genotype)."""
from __future__ import annotations

from kubetune import nas as _nas

del annotations  # the future flag stays in effect; the name would be a stray module attribute

__all__ = ["run"]


def run(quick: bool = False) -> None:
    """Two (quick) or four epochs of DARTS on 8x8 digits, on the CPU."""
    X, y = _nas.load_digits()
    epochs, channels = (2, 4) if quick else (4, 6)
    # one thread: on 8x8 images the ops are too small for OpenMP teams to pay off
    search = _nas.DARTS(
        channels=channels, layers=2, nodes=2, stem_multiplier=1, batch_size=64, w_lr=0.1, alpha_lr=3e-3, seed=0,
        n_threads=1,
    )
    res = search.search(X, y, epochs=epochs, device="cpu")
    print(f"{'epoch':>5} {'lr':>7} {'train loss':>10} {'train acc':>9} {'val acc':>7} {'s':>5}")
    for h in res.history:
        print(
            f"{h['epoch'] + 1:>5} {h['lr']:>7.4f} {h['train_loss']:>10.3f} {h['train_acc']:>9.3f} "
            f"{h['val_acc']:>7.3f} {h['seconds']:>5.1f}"
        )
    g = res.genotype
    print("normal cell:", ", ".join(f"{op}<-{src}" for op, src in g.normal))
    print("reduce cell:", ", ".join(f"{op}<-{src}" for op, src in g.reduce))
