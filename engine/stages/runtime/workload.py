"""The user's program as one step: the model called on each input set (and backward when training), every rung on
its own fresh copy, seeded alike."""

from __future__ import annotations

import copy
import random
import time
import types
from dataclasses import dataclass, field

import torch
import torch.utils._pytree as pytree

SEED = 1234  # torch.manual_seed (CPU and CUDA) and random.seed before every compared step


def seed_everything(seed: int = SEED) -> None:
    random.seed(seed)
    torch.manual_seed(seed)  # every device's generator, CUDA included


@dataclass
class Instance:
    """One rung's own copy of the model and inputs as loaded; ``params`` = (name, parameter) that take gradients
    (a module's parameters; for a function, the tensors and modules its code names in its globals and closure);
    ``grad_leaves`` = every leaf tensor whose gradient a step writes: the params and the inputs that require grad.
    """

    model: object
    inputs: list
    params: list
    grad_leaves: list = field(default_factory=list)


class Workload:
    """The user's program as one step: the model called on each input set in turn (and backward when training),
    under torch.no_grad() unless training. Every rung runs its own ``fresh()`` copy, so state the model carries
    (a call counter, running statistics, a cache) cannot leak from one rung into the next."""

    def __init__(self, model, inputs_list, train: bool, loss_fn, device: str):
        self.pristine, self.pristine_inputs = model, inputs_list
        self.train, self.loss_fn, self.device = train, loss_fn, device
        self.copyable = True
        try:
            copy.deepcopy(model)
            self.model_state = "deepcopy per rung" + (
                "" if isinstance(model, torch.nn.Module) else " (a function: its globals and closures are shared)"
            )
        except Exception as exc:  # noqa: BLE001 - any object the user made may refuse to be copied
            self.copyable = False
            self.model_state = f"shared: the model cannot be deep-copied ({type(exc).__name__}: {exc})"[:300]

    def fresh(self) -> Instance:
        model = copy.deepcopy(self.pristine) if self.copyable else self.pristine
        inputs = [pytree.tree_map_only(torch.Tensor, _fresh_tensor, args) for args in self.pristine_inputs]
        params = trainable_params(model)
        input_leaves = [
            t
            for args in inputs
            for t in pytree.tree_leaves(args)
            if isinstance(t, torch.Tensor) and t.is_leaf and t.requires_grad
        ]
        leaves = list({id(t): t for t in [p for _, p in params] + input_leaves}.values())
        return Instance(model, inputs, params, leaves)

    def grad_mode(self):
        return torch.enable_grad() if self.train else torch.no_grad()

    def step(self, fn, inst: Instance, *, cudagraph_steps: bool = False, keep: dict | None = None) -> None:
        """One step: each example input set in turn, as one iteration of a user's loop. Before each set the
        gradients of every leaf it writes are set to None (as optimizer.zero_grad() does; inputs that require
        grad included) and, under CUDA graphs, ``cudagraph_mark_step_begin()`` is called: a replay overwrites
        the previous one's outputs, gradients included, so nothing is kept across replays. With ``keep``
        (``{"outs": [], "grads": {}}``), clones of each set's output tensors and the sum of each set's gradients
        are added to it at once, before the next set's replay."""
        leaves = inst.grad_leaves if self.train else ()  # under torch.no_grad() no gradient is written
        for args in inst.inputs:
            for leaf in leaves:
                leaf.grad = None
            if cudagraph_steps:
                torch.compiler.cudagraph_mark_step_begin()
            out = fn(*args)
            if self.train:
                loss = self.loss_fn(out) if self.loss_fn else _default_loss(out)
                loss.backward()
            if keep is not None:
                keep["outs"].extend(t.detach().clone() for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor))
                for name, p in inst.params:
                    if p.grad is not None:
                        grad = p.grad.detach().clone()
                        keep["grads"][name] = keep["grads"][name] + grad if name in keep["grads"] else grad

    def run_steps(self, fn, inst: Instance, count: int, *, cudagraph_steps: bool = False) -> None:
        """``count`` back-to-back steps, as lean as a user's loop: an inference step is the bare call(s), with no
        gradient reset (under torch.no_grad() there are none) and no per-step bookkeeping; a training step or a
        CUDA-graph step does what ``step`` does. On a host-bound step of 10-50 us, each microsecond of our Python
        per step would read as a few percent of the user's time. Each output is kept until the next replaces it,
        as ``y = model(x)`` does: calls whose output was freed at once made the seed's eager step 2.5-3x slower in
        some sandboxed jobs (speedups of 4-5x that the next job did not reproduce, tests/engine/test_runtime_truth)."""
        if self.train or cudagraph_steps:
            for _ in range(count):
                self.step(fn, inst, cudagraph_steps=cudagraph_steps)
        elif len(inst.inputs) == 1:  # ``out = model(x)``: the output lives until the next one, as in a user's loop
            (args,) = inst.inputs
            out = None
            for _ in range(count):
                out = fn(*args)  # noqa: F841 - kept alive until the next step replaces it
        else:
            inputs, out = inst.inputs, None
            for _ in range(count):
                for args in inputs:
                    out = fn(*args)  # noqa: F841 - kept alive until the next step replaces it

    def sync(self):
        if self.device == "cuda":
            torch.cuda.synchronize()

    def compared_step(self, fn, inst: Instance, *, cudagraph_steps: bool = False, seed: int = SEED):
        """The step whose outputs and gradients are compared: seeded, timed as a whole (a first call includes the
        compile). Returns (ms, outputs, {parameter name: gradient})."""
        seed_everything(seed)
        kept: dict = {"outs": [], "grads": {}}
        with self.grad_mode():
            t0 = time.perf_counter()
            self.step(fn, inst, cudagraph_steps=cudagraph_steps, keep=kept)
            self.sync()
            ms = (time.perf_counter() - t0) * 1000
        return ms, kept["outs"], kept["grads"]

    def float64_run(self):
        """Outputs and gradients of plain eager in float64 (a fresh copy): the yardstick of the fp64 check."""
        inst = self.fresh()
        if isinstance(inst.model, torch.nn.Module):
            inst.model.double()
            inst.params = trainable_params(inst.model)
            inst.grad_leaves = [p for _, p in inst.params]
        inst.inputs = [
            pytree.tree_map_only(torch.Tensor, lambda t: t.double() if t.is_floating_point() else t, a)
            for a in inst.inputs
        ]
        _, outs, grads = self.compared_step(inst.model, inst)
        return outs, grads


def trainable_params(model) -> list:
    """(name, tensor) that take gradients: a module's parameters; for a plain function, the leaf tensors and the
    modules' parameters that its code names in its globals and closure (one level: what ``f`` reads directly)."""
    if isinstance(model, torch.nn.Module):
        return [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if not isinstance(model, types.FunctionType):
        return []
    code = model.__code__
    named = {n: model.__globals__[n] for n in code.co_names if n in model.__globals__}
    for name, cell in zip(code.co_freevars, model.__closure__ or ()):
        try:
            named[name] = cell.cell_contents
        except ValueError:  # an empty cell (a name assigned later in the enclosing function)
            continue
    params = []
    for name, value in named.items():
        if isinstance(value, torch.Tensor) and value.is_leaf and value.requires_grad:
            params.append((name, value))
        elif isinstance(value, torch.nn.Module):
            params += [(f"{name}.{n}", p) for n, p in value.named_parameters() if p.requires_grad]
    return params


def _fresh_tensor(t: torch.Tensor) -> torch.Tensor:
    return t.detach().clone().requires_grad_(t.requires_grad)


def _default_loss(out):
    tensors = [t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor) and t.is_floating_point()]
    return sum(t.float().sum() for t in tensors)
