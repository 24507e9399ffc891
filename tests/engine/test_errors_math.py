"""Output errors against eager: computed wide, complex parts included, relative to the reference's magnitude."""

import torch

from engine.stages.runtime.accuracy import max_errors, tf32_note


def test_errors_are_absolute_and_normwise_relative():
    ref = [torch.tensor([1.0, -4.0]), torch.tensor([[2.0]])]
    out = [torch.tensor([1.0, -3.5]), torch.tensor([[2.0]])]
    assert max_errors(out, ref) == (0.5, 0.5 / 4.0)


def test_complex_outputs_keep_their_imaginary_part():
    ref = [torch.tensor([1 + 1j])]
    assert max_errors([torch.tensor([1 + 3j])], ref)[0] == 2.0


def test_half_precision_and_integer_outputs_compare_exactly():
    assert max_errors([torch.tensor([1.5], dtype=torch.bfloat16)], [torch.tensor([1.0])])[0] == 0.5
    assert max_errors([torch.tensor([3])], [torch.tensor([1])]) == (2.0, 2.0)


def test_shape_mismatch_gives_no_number():
    assert max_errors([torch.zeros(2)], [torch.zeros(3)]) == (None, None)


def test_a_float32_mismatch_on_a_gpu_names_the_tf32_switches_that_are_on():
    """cuDNN allows TF32 by default: a GPU conv net's compiled rung may round where eager did not, and the reason
    says which switch to turn off to compare at full float32; off the GPU, or with both off, nothing is said."""
    before = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = True, False
        note = tf32_note("cuda")
        assert (
            "torch.backends.cudnn.allow_tf32 = True" in note and "set torch.backends.cudnn.allow_tf32 = False" in note
        )
        assert "matmul" not in note
        assert tf32_note("cpu") is None
        torch.backends.cuda.matmul.allow_tf32 = True
        assert "torch.backends.cuda.matmul.allow_tf32 = False in your file" in tf32_note("cuda")
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = False, False
        assert tf32_note("cuda") is None
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = before
