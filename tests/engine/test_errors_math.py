"""Output errors against eager: computed wide, complex parts included, relative to the reference's magnitude."""

import torch

from engine.stages.runtime.accuracy import max_errors


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
