"""Said once, in ``grade check``'s terminal output: a module whose output is wrong says so under [forward], and its
[gradients] block says the gradients follow from it without the values again (tests/unit/test_said_once.py holds
the pieces)."""
from __future__ import annotations

from .conftest import ROOT, run_grade


def test_grade_check_says_the_gradients_differ_too_without_the_values_again():
    run = run_grade("check", str(ROOT / "tests" / "corpus" / "submissions" / "bug_mha_no_out_proj"))
    text = run.stdout
    block = text.split("multihead_attention.MultiHeadAttention [gradients]", 1)[1].split("\n\n", 1)[0]
    assert block.splitlines()[1:] == [
        "  the output of this case is wrong as shown under [forward]; the gradients differ too: they follow from the "
        "output, so fix the output first",
        "  parameter out_proj.weight gets no gradient: it is unused in forward, or cut by .detach()",
        "  parameter out_proj.bias gets no gradient: it is unused in forward, or cut by .detach()"]
    forward = text.split("multihead_attention.MultiHeadAttention [forward]", 1)[1].split("\n\n", 1)[0]
    assert "likely: out_proj is created but never applied" in forward and "output, row" in forward  # control: said once
