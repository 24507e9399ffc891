"""The accuracy check: a rung's compared step against plain eager, like torch._dynamo.utils.same (dtype-aware
tolerances, an fp64 fallback), eager against itself first, and the first stage of the ladder that diverges."""

from __future__ import annotations

import torch

from engine.stages.runtime.workload import SEED, Workload

# Like torch._dynamo.utils.same: allclose at tol, else the rung's error against float64 at most 2x (3x for half
# types) plain eager's plus tol/10. Gradients of a training step get 10x (PyTorch's benchmarks loosen training too).
TOLERANCE = {torch.float64: 1e-7, torch.float32: 1e-4, torch.bfloat16: 1e-2, torch.float16: 1e-3}
GRAD_TOLERANCE_FACTOR = 10.0
STAGE_OF_BACKEND = {"eager": "dynamo", "aot_eager": "aot_autograd", "inductor": "inductor"}
STAGE_WORDS = {"dynamo": "Dynamo (graph capture)", "aot_autograd": "AOTAutograd", "inductor": "Inductor"}


def max_errors(actual: list, expected: list) -> tuple[float | None, float | None]:
    """Max absolute error, and relative error as max|a-e| / max|e| (norm-wise: no blow-up near zero)."""
    if len(actual) != len(expected):
        return None, None
    abs_err, ref_max = 0.0, 0.0
    for a, e in zip(actual, expected):
        if a.shape != e.shape:
            return None, None
        a, e = _widened(a), _widened(e)
        diff = (a - e).abs()
        abs_err = max(abs_err, float(diff.max()) if diff.numel() else 0.0)
        ref_max = max(ref_max, float(e.abs().max()) if e.numel() else 0.0)
    return abs_err, (abs_err / ref_max if ref_max else abs_err)


def _widened(t: torch.Tensor) -> torch.Tensor:
    """float64 (complex128 for complex): errors are computed above the precision of what is compared."""
    return t.to(torch.complex128 if t.is_complex() else torch.float64)


def tolerance(dtype: torch.dtype, gradients: bool = False) -> float:
    """0 for integers and bools (exact); the dtype's tolerance otherwise (complex: that of its parts)."""
    if dtype.is_complex:
        dtype = {torch.complex128: torch.float64, torch.complex32: torch.float16}.get(dtype, torch.float32)
    if not dtype.is_floating_point:
        return 0.0
    return TOLERANCE.get(dtype, 1e-4) * (GRAD_TOLERANCE_FACTOR if gradients else 1.0)


def _rmse(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(((_widened(a) - _widened(b)).abs() ** 2).mean().sqrt()) if a.numel() else 0.0


def compare(actual: list, expected: list, float64: list | None, *, gradients: bool = False) -> dict:
    """One verdict over lists of tensors, like torch._dynamo.utils.same: allclose(atol=rtol=tol) per tensor, and
    for a tensor that fails it, the fp64 check (its RMSE against ``float64`` at most 2x, 3x for half types, that
    of ``expected`` plus tol/10)."""
    abs_err, rel_err = max_errors(actual, expected)
    tol = max((tolerance(e.dtype, gradients) for e in expected), default=0.0)
    result = {
        "verdict": "match",
        "max_abs_error": abs_err,
        "max_rel_error": rel_err,
        "atol": tol,
        "rtol": tol,
        "fp64_checked": False,
        "reason": None,
    }
    if abs_err is None:
        n_a, n_e = len(actual), len(expected)
        result.update(
            verdict="mismatch",
            reason=f"{n_a} tensors against eager's {n_e}" if n_a != n_e else "a tensor's shape differs from eager's",
        )
        return result
    failed = []
    for i, (a, e) in enumerate(zip(actual, expected)):
        t = tolerance(e.dtype, gradients)
        if a.dtype != e.dtype:
            failed.append(f"tensor {i}: dtype {a.dtype} where eager gives {e.dtype}")
            continue
        a_w, e_w = (_widened(a), _widened(e)) if t else (a, e)
        if t == 0.0:
            if not torch.equal(a, e):
                failed.append(f"tensor {i} ({e.dtype}) differs (exact comparison)")
            continue
        if torch.allclose(a_w, e_w, atol=t, rtol=t, equal_nan=True):
            continue
        ref64 = float64[i] if float64 is not None and i < len(float64) else None
        if ref64 is not None and ref64.shape == e.shape:
            result["fp64_checked"] = True
            multiplier = 3.0 if e.dtype in (torch.float16, torch.bfloat16) or e.numel() < 1000 else 2.0
            res_error, ref_error = _rmse(a, ref64), _rmse(e, ref64)
            if res_error <= multiplier * ref_error + t / 10:
                continue
            failed.append(f"tensor {i}: RMSE {res_error:.3g} against float64, eager's {ref_error:.3g}")
        else:
            failed.append(f"tensor {i}: beyond atol=rtol={t:g}")
    if failed:
        result.update(
            verdict="mismatch",
            reason="; ".join(failed[:3]) + (f" (+{len(failed) - 3} more)" if len(failed) > 3 else ""),
        )
    return result


class Reference:
    """Plain eager, run from the state as loaded with the seed: the yardstick of every rung."""

    def __init__(self, workload: Workload):
        self.workload = workload
        self.uses_rng = False  # until the run with another seed below says otherwise
        self.inst = workload.fresh()
        self.first_ms, self.outs, self.grads = workload.compared_step(self.inst.model, self.inst)
        # Eager against itself (same state, same seed): a model that disagrees with itself cannot be judged.
        again = workload.fresh()
        _, outs2, grads2 = workload.compared_step(again.model, again)
        repeat = self.judge(outs2, grads2, use_fp64=False)
        self.deterministic = repeat["verdict"] == "match"
        # Another seed: does the model draw random numbers (so that matching it needs the reseed)?
        other = workload.fresh()
        _, outs3, _ = workload.compared_step(other.model, other, seed=SEED + 1)
        self.uses_rng = len(outs3) != len(self.outs) or any(
            a.shape != b.shape or not torch.equal(a, b) for a, b in zip(outs3, self.outs)
        )
        self.repeat = {
            "verdict": repeat["verdict"],
            "max_abs_error": repeat["max_abs_error"],
            "uses_rng": self.uses_rng,
        }
        self._float64 = None

    def float64(self):
        if self._float64 is None:
            try:
                self._float64 = self.workload.float64_run()
            except Exception:  # noqa: BLE001 - not every model runs in float64: then allclose alone decides
                self._float64 = ([], {})
        return self._float64

    def judge(self, outs: list, grads: dict, *, use_fp64: bool = True) -> dict:
        """{verdict, errors, tolerances, reason, gradients?} of a rung's compared step against this reference."""
        # A model that draws random numbers: the float64 run draws its own (another dtype, another stream), so it
        # is no yardstick (an error of 7.9 read as a match beside it); allclose alone decides.
        use_fp64 = use_fp64 and not self.uses_rng
        result = compare(outs, self.outs, None)
        if result["verdict"] == "mismatch" and use_fp64 and result["max_abs_error"] is not None:
            result = compare(outs, self.outs, self.float64()[0] or None)
        if result["verdict"] == "mismatch" and any(t.dtype == torch.float32 for t in self.outs):
            note = tf32_note(self.workload.device)
            result["reason"] = f"{result['reason']}. {note}" if note and result["reason"] else result["reason"]
        if self.workload.train:
            names = sorted(self.grads)
            if sorted(grads) != names:
                g = {
                    "verdict": "mismatch",
                    "max_abs_error": None,
                    "max_rel_error": None,
                    "atol": None,
                    "rtol": None,
                    "fp64_checked": False,
                    "reason": f"gradients for {len(grads)} parameters where eager has {len(names)}",
                }
            else:
                actual, expected = [grads[n] for n in names], [self.grads[n] for n in names]
                g = compare(actual, expected, None, gradients=True)
                if g["verdict"] == "mismatch" and use_fp64 and g["max_abs_error"] is not None:
                    g64 = self.float64()[1]
                    g = compare(
                        actual, expected, [g64[n] for n in names] if sorted(g64) == names else None, gradients=True
                    )
            result["gradients"] = g
            if g["verdict"] == "mismatch" and result["verdict"] == "match":
                result.update(verdict="mismatch", reason="gradients: " + (g["reason"] or "mismatch"))
        return result


def tf32_note(device: str) -> str | None:
    """Why a float32 rung on a GPU may differ from eager with nothing wrong in the compiler: where TF32 is allowed
    (cuDNN's convolutions allow it by default), a compiled graph that picks another layout or algorithm may round
    its inputs to TF32's 10-bit mantissa where eager's kernels did not. An H100 conv net's default rung: RMSE against
    float64 5.2e-5 where eager's was 3.7e-8, and the bisector named layout optimization (channels-last)."""
    if device != "cuda":
        return None
    switches = {
        "torch.backends.cudnn.allow_tf32": torch.backends.cudnn,
        "torch.backends.cuda.matmul.allow_tf32": torch.backends.cuda.matmul,
    }
    allowed = [name for name, module in switches.items() if getattr(module, "allow_tf32", False)]
    if not allowed:
        return None
    return (
        f"TF32 is allowed here ({' and '.join(allowed)} = True): a compiled kernel in another layout or algorithm may "
        "round float32 inputs to TF32 where eager's did not; to compare at full float32, set "
        f"{' and '.join(f'{name} = False' for name in allowed)} in your file"
    )


RANDOM_STREAM_EAGER = (
    "both sides draw from torch's generator, seeded alike ({seed}) before the compared step: the random ops run "
    "as in eager"
)
RANDOM_STREAM_FALLBACK = (
    "checked on the same random stream: this rung compiled a second time with "
    "torch._inductor.config.fallback_random = True (torch's RNG ops, seeded alike ({seed})) for the check; its "
    "timed compile keeps Inductor's own RNG, as the user would run it"
)


def fallback_random_backend(mode: str | None):
    """A backend that compiles like backend="inductor" with ``mode`` but with fallback_random on (Inductor then
    calls torch's RNG ops, so a seed gives eager's numbers): (backend, None), or (None, why not) where this torch
    has no such option. A backend of its own, so Dynamo does not hand the timed compile's code to the check."""
    import torch._inductor.config as inductor_config

    if not hasattr(inductor_config, "fallback_random"):
        return None, f"torch {torch.__version__} has no torch._inductor.config.fallback_random"
    try:
        from torch._inductor.compile_fx import compile_fx

        patches = {**dict(torch._inductor.list_mode_options(mode)), "fallback_random": True}
    except Exception as exc:  # noqa: BLE001 - private API: say what was missing
        return None, f"the Inductor API to compile with fallback_random is unavailable ({type(exc).__name__}: {exc})"

    def inductor_fallback_random(gm, example_inputs):
        return compile_fx(gm, example_inputs, config_patches=patches)

    return inductor_fallback_random, None


def rung_verdict(
    rung_result: dict, reference: Reference, backend: str | None, same_stream: tuple[bool, str] | None = None
) -> dict:
    """A rung's correctness. nondeterministic when eager disagrees with itself. For a model that draws random
    numbers, ``same_stream`` = (whether ``rung_result`` was computed with both sides on one random stream, how or
    why not): without one the verdict is not_comparable, never match."""
    if not reference.deterministic:
        return {
            **rung_result,
            "verdict": "nondeterministic",
            "reason": "plain eager gives different results from the same state and seed: nothing to compare with",
            "random_stream": None,
        }
    if not reference.uses_rng:
        return {**rung_result, "random_stream": None}
    if backend != "inductor":
        return {**rung_result, "random_stream": RANDOM_STREAM_EAGER.format(seed=SEED)}
    same, how = same_stream or (False, "no same-stream check was run")
    if same:
        return {**rung_result, "random_stream": how}
    return {
        **rung_result,
        "verdict": "not_comparable",
        "reason": "the model draws random numbers and Inductor generates its own (Philox), so its values cannot "
        f"be compared with eager's: {how}",
        "random_stream": how,
    }


def first_divergent_stage(entries: list[dict], reference: Reference) -> dict:
    """The first stage of eager -> backend_eager -> aot_eager -> inductor whose rung mismatches, in words."""
    ladder = []
    for e in entries:
        stage = STAGE_OF_BACKEND.get(e.get("backend"))
        verdict = (e.get("correctness") or {}).get("verdict")
        if stage and verdict:
            ladder.append({"config": e["config"], "stage": stage, "verdict": verdict})
    out = {
        "first_divergent_stage": None,
        "deterministic": reference.deterministic,
        "uses_rng": reference.uses_rng,
        "ladder": ladder,
    }
    if not reference.deterministic:
        out["text"] = (
            "Plain eager gives different results when run twice from the same state and seed: the model "
            "is nondeterministic, so no compiled result can be judged against it."
        )
        return out
    agreed = ["eager"]
    order = ("dynamo", "aot_autograd", "inductor")
    for stage in order:
        rungs = [r for r in ladder if r["stage"] == stage]
        bad = next((r for r in rungs if r["verdict"] == "mismatch"), None)
        if bad:
            entry = next(e for e in entries if e["config"] == bad["config"])
            c = entry["correctness"]
            skipped = [STAGE_WORDS[s] for s in order[: order.index(stage)] if not any(r["stage"] == s for r in ladder)]
            out["first_divergent_stage"] = stage
            errors = (
                f"max abs error {c['max_abs_error']:.3g} > atol {c['atol']:.3g}"
                if c.get("max_abs_error") is not None and c.get("atol") is not None
                else c.get("reason")
            )
            out["text"] = (
                f"{', '.join(agreed)} agree; {bad['config']} differs ({errors}): the divergence starts in "
                f"{STAGE_WORDS[stage]}."
                + (
                    f" ({' and '.join(skipped)} not run: the divergence may start there; add its rung to tell.)"
                    if skipped
                    else ""
                )
            )
            return out
        agreed += [r["config"] for r in rungs if r["verdict"] == "match"]
    undecided = [r["config"] for r in ladder if r["verdict"] in ("nondeterministic", "not_comparable")]
    out["text"] = (
        f"Every compiled config matches plain eager within tolerance ({', '.join(agreed[1:]) or 'none run'})."
        + (f" Not judged: {', '.join(undecided)} (random numbers not on eager's stream)." if undecided else "")
    )
    return out
