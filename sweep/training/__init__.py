"""Training a noisy layer model's parameter-linear FFN under L2 (docs/training.md): the
`training:` section and its grid axes (settings), the task's draws and targets (tasks), what
a task is asked on (inputs: a clusters mixture, or fixed tokens with their labels), the
forward and hand-written backward pass (backprop), gradient descent (optimise), and the
sweep over the grid with observables before and after (sweeping)."""
